"""The world and its pure dynamics: state, transition, actions, layouts, tasks,
episode starts, rewards, masks, navigation and the documented caps.
"""
