"""Big teams stay legible: bubbles, roles, YOU, room names, icons, colours, the goal."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

pygame = pytest.importorskip("pygame")

from orgteams.agents.messages import TeamMessage  # noqa: E402
from orgteams.envs import household_v0  # noqa: E402
from orgteams.envs.render.bubbles import MAX_BUBBLES, _receivers  # noqa: E402
from orgteams.envs.render.overlay import Overlay  # noqa: E402
from orgteams.envs.render.renderer import PygameRenderer  # noqa: E402
from orgteams.envs.render.style import ROLE_COLORS, YOU_COLOR, agent_color  # noqa: E402
from orgteams.envs.render.world import MIN_ICON, _icon_grid, place_name_tags  # noqa: E402

NAMES = ["Alice", "Bob", "Charlie", "David", "Eve", "Frank", "Grace", "Heidi", "Ivan"]


@pytest.fixture(scope="module")
def house():
    env = household_v0.parallel_env(layout="house", num_agents=9)
    env.reset(seed=0)
    yield env.unwrapped.world
    env.close()


def chatty(rounds=(1, 2, 3)) -> Overlay:
    """Every one of nine agents says something, spread over ``rounds``."""
    overlay = Overlay()
    for k, (a, r) in enumerate(zip(range(9), itertools.cycle(rounds))):
        receivers = tuple(f"agent_{b}" for b in range(9) if b != a)[: 1 + k % 7]
        overlay.say(TeamMessage(f"agent_{a}", receivers, f"message {k} about the fridge", round=r))
    return overlay


def test_only_the_newest_bubbles_clear_of_each_other_and_of_name_tags(house):
    renderer = PygameRenderer("rgb_array")
    overlay = chatty(rounds=(1, 2, 3))
    renderer.draw(house, overlay, NAMES)
    layout = renderer.last
    bubbles = layout.bubbles.bubbles
    # The newest four senders (agents 5..8) get a bubble where there is room, drawn
    # oldest first; the others' messages stay in the panel's log.
    assert len(bubbles) + len(layout.bubbles.dropped) == MAX_BUBBLES and len(bubbles) >= 2
    order = [5, 6, 7, 8]
    senders = [int(b.message.sender[6:]) for b in bubbles]
    assert senders == sorted(senders, key=order.index)
    assert [b.color for b in bubbles] == [agent_color(a) for a in senders]
    boxes = [b.box for b in bubbles]
    for x, y in itertools.combinations(boxes, 2):
        assert not x.colliderect(y)
    tags = list(layout.tags.values())
    for box in boxes:
        assert box.collidelist(tags) < 0
    # Faded by age: agent 8 spoke in round 3 (the newest), agent 6 in round 1.
    alpha = {int(b.message.sender[6:]): b.alpha for b in bubbles}
    assert alpha.get(8, 255) == 255 and all(v <= 255 for v in alpha.values())
    if 6 in alpha and 7 in alpha:
        assert alpha[6] < alpha[7] < 255
    assert bubbles[-1].stamp == f"r{bubbles[-1].message.round}"  # the round stamp


def test_long_recipient_lists_are_shortened():
    index = {f"agent_{i}": i for i in range(9)}
    many = tuple(f"agent_{i}" for i in range(2, 8))
    assert _receivers(many, NAMES, index, 9) == "@members (6): "
    assert _receivers(("agent_1", "agent_4"), NAMES, index, 9) == "@Bob,Eve: "
    assert _receivers(tuple(f"agent_{i}" for i in range(1, 9)), NAMES, index, 9) == ""


def test_name_tags_do_not_cover_each_other_in_a_crowd(house):
    # Three agents side by side in a row: tags alternate above and below.
    row_cells = [c for c in range(len(house.scene.floor)) if house.scene.floor[c]]
    start = next(c for c in row_cells if all(house.scene.floor[c + k] for k in range(3)))
    crowd = type(house)(house.scene, house.tick, (start, start + 1, start + 2) + tuple(
        house.agent_pos[3:]), house.hands, house.contents, house.container_open,
        house.door_open)
    renderer = PygameRenderer("rgb_array")
    renderer.render(crowd, None, NAMES)
    tags = place_name_tags(renderer.pg, renderer.text, crowd, renderer._cell, NAMES, None,
                           renderer._map.get_rect())
    crowded = [tags[a] for a in range(3) if a in tags]
    assert len(crowded) >= 2  # a tag with no free spot is left out, never piled on
    for x, y in itertools.combinations(crowded, 2):
        assert not x.colliderect(y)


def test_roles_and_you_are_drawn(house):
    renderer = PygameRenderer("rgb_array")
    plain = renderer.render(house, Overlay(), NAMES).copy()
    overlay = Overlay(organization="pyramid", roles={"agent_0": "leader"}, you="agent_2")
    marked = renderer.render(house, overlay, NAMES)
    cell, top = renderer._cell, renderer._map.get_offset()
    w = house.scene.width

    def around(a, pad):
        r, c = divmod(house.agent_pos[a], w)
        x, y = top[0] + c * cell, top[1] + r * cell
        return (slice(max(0, y - pad), y + cell + pad), slice(max(0, x - pad), x + cell + pad))

    def has(frame, region, color):
        return bool((np.abs(frame[region].astype(int) - color).sum(axis=2) < 20).any())

    assert has(marked, around(0, 4), ROLE_COLORS["leader"])
    assert not has(plain, around(0, 4), ROLE_COLORS["leader"])
    assert has(marked, around(2, 8), YOU_COLOR) and not has(plain, around(2, 8), YOU_COLOR)
    assert not np.array_equal(plain[:, -300:], marked[:, -300:])  # the panel names the org


def test_room_names_move_off_the_row_an_agent_stands_on(house):
    from orgteams.envs.render.world import draw_room_names

    renderer = PygameRenderer("rgb_array")
    renderer.render(house, None, NAMES)
    spots, cell = renderer._room_spots, renderer._cell
    room = next(i for i, s in enumerate(spots) if len(s) > 1)
    row, c0, _, _, _ = spots[room][0]
    w = house.scene.width
    blocked = type(house)(house.scene, house.tick, (row * w + c0 + 1,) + tuple(
        house.agent_pos[1:]), house.hands, house.contents, house.container_open,
        house.door_open)
    free_rects = draw_room_names(renderer.pg, renderer.text, renderer._map, house, cell, spots)
    moved = draw_room_names(renderer.pg, renderer.text, renderer._map, blocked, cell, spots)
    agent = renderer.pg.Rect((c0 + 1) * cell, row * cell, cell, cell)
    assert moved[room] != free_rects[room] or not free_rects[room].colliderect(agent)
    assert not moved[room].colliderect(agent)


@pytest.mark.parametrize("cell", [18, 24, 30, 48])
def test_object_icons_are_never_smaller_than_the_minimum(cell):
    rect = pygame.Rect(0, 0, cell - 2, cell - 2)
    for n in range(1, 10):
        slots = list(_icon_grid(rect, n, max(2, cell // 8)))
        assert slots and all(size >= MIN_ICON for _, _, size in slots)
        assert all(x + size <= rect.right + 1 and y + size <= rect.bottom + 1
                   for x, y, size in slots) or cell < 2 * MIN_ICON


def test_sixteen_agent_colours_are_distinct_and_not_grey():
    colors = [np.array(agent_color(i), float) for i in range(16)]
    for a, b in itertools.combinations(colors, 2):
        assert np.abs(a - b).sum() > 90
    greys = [c for c in colors[:15] if c.max() - c.min() < 40]
    assert greys == []  # the 16th is near-black, far from the grey walls
    assert colors[15].max() < 60


def test_human_render_mode_draws_on_reset_and_step_without_render_calls():
    env = household_v0.parallel_env(layout="studio", render_mode="human", render_fps=1000)
    env.reset(seed=0)
    renderer = env.unwrapped._renderer
    assert renderer is not None and renderer.frames == 1
    env.step({a: 0 for a in env.agents})
    assert renderer.frames == 2
    assert pygame.display.get_surface() is not None
    env.close()


def test_a_room_name_finds_the_free_stretch_of_a_crowded_row():
    from orgteams.envs.render.world import _widest_free_run

    taken = {(5, 3), (5, 4), (5, 9)}
    assert _widest_free_run(5, 0, 12, taken) == (5, 8)
    assert _widest_free_run(5, 3, 4, taken) == (3, 2)  # nothing free
    assert _widest_free_run(6, 0, 12, taken) == (0, 12)


@pytest.mark.parametrize("width", range(MIN_ICON, 31))
def test_an_object_icons_letters_stay_inside_the_icon(width):
    """Two bold letters at 72% of a 15 to 20 px icon were wider than it: on a full
    coffee table the glyphs of neighbours ran together ('apwn' for apple, wine)."""
    from orgteams.envs.core.catalog import load_catalog
    from orgteams.envs.render.style import Text
    from orgteams.envs.render.world import icon

    pygame.font.init()
    text = Text(pygame)
    background = (0, 255, 0)
    for cls, glyph in load_catalog().object_glyphs.items():
        surf = pygame.Surface((width + 40, width + 40))
        surf.fill(background)
        rect = pygame.Rect(20, 20, width, width)
        icon(pygame, text, surf, cls, rect)
        pixels = pygame.surfarray.array3d(surf).transpose(1, 0, 2)
        outside = np.ones(pixels.shape[:2], bool)
        outside[rect.top:rect.bottom, rect.left:rect.right] = False
        spilled = (pixels[outside] != background).any(axis=1)
        assert not spilled.any(), (cls, glyph, width)


def test_a_name_tag_pushed_beside_its_agent_does_not_cover_the_room_name():
    """In `orgteams play` on the studio, Charlie beside the player in the bathroom had its
    tag pushed to its left (the sink above, the player's tag below), right over the room
    name ('bathr[Charlie]'): names were placed as if every tag sat above its agent."""
    env = household_v0.parallel_env(layout="studio", num_agents=3)
    env.reset(seed=0)
    world = env.unwrapped.world
    scene, w = world.scene, world.scene.width
    bathroom = scene.layout.rooms.index("bathroom")
    cells = [i for i, r in enumerate(scene.room_of_cell) if r == bathroom and scene.floor[i]]
    rows = sorted({i // w for i in cells})
    middle = [i for i in cells if i // w == rows[len(rows) // 2]]
    alice, charlie = max(middle), max(middle) - 1  # the east end of the middle row
    bob = next(i for i in range(len(scene.floor)) if scene.floor[i]
               and scene.room_of_cell[i] not in (bathroom, -1))
    moved = type(world)(scene, 3, [alice, bob, charlie], world.hands, world.contents,
                        world.container_open, world.door_open)
    renderer = PygameRenderer("rgb_array")
    renderer.draw(moved, Overlay(you="agent_0"), ["Alice", "Bob", "Charlie"])
    layout = renderer.last
    assert {0, 2} <= set(layout.tags)
    label = layout.room_names[bathroom]
    assert label.collidelist(list(layout.tags.values())) < 0, (label, layout.tags)
    env.close()


def test_a_room_name_does_not_cover_furniture_when_the_row_has_room_beside_it():
    """At 64 agents the kitchen's name sat on its furniture row ('kit[K]en'): a row's
    furniture counted as free for the name, only agents and tags did not."""
    from orgteams.envs.core.layout import FURNITURE
    from orgteams.envs.render.world import draw_room_names

    env = household_v0.parallel_env(layout="house", num_agents=10)
    env.reset(seed=0)
    world = env.unwrapped.world
    scene, w = world.scene, world.scene.width
    layout = scene.layout
    # The dining room's rows 2 and 5 crowded (their tags cover rows 1 and 4), row 3
    # free but for the table at column 14.
    assert [c for c in range(11, 20) if layout.tiles[3, c] == FURNITURE] == [14]
    crowd = [row * w + c for row in (2, 5) for c in (11, 13, 15, 17, 19)]
    moved = type(world)(scene, 0, crowd, world.hands, world.contents, world.container_open,
                        world.door_open)
    renderer = PygameRenderer("rgb_array")
    renderer.draw(moved, None, None)
    cell = renderer.last.cell
    names = draw_room_names(renderer.pg, renderer.text, renderer._map, moved, cell,
                            renderer._room_spots)
    room = layout.rooms.index("dining_room")
    table = pygame.Rect(14 * cell, 3 * cell, cell, cell)
    furniture = [pygame.Rect(c * cell, r * cell, cell, cell)
                 for r, c in np.argwhere(layout.tiles == FURNITURE)]
    assert not names[room].colliderect(table), (names[room], table)
    assert names[room].collidelist(furniture) < 0
    env.close()


def test_the_end_banner_goes_where_it_hides_fewer_agents_and_objects():
    """The end banner always lay across the top of the map, over whatever was there:
    the last frame's agents and objects on the top rows could not be seen while held."""
    from orgteams.envs.render.boxes import MARGIN

    env = household_v0.parallel_env(layout="apartment", num_agents=9)  # fills the frame
    env.reset(seed=0)
    world = env.unwrapped.world
    scene, w = world.scene, world.scene.width
    floor = [i for i in range(len(scene.floor)) if scene.floor[i]]
    middle = w // 2

    def row_of(cells):  # nine floor cells of one row, nearest the middle of the map
        return sorted(cells, key=lambda i: abs(i % w - middle))[:9]

    top = row_of([i for i in floor if i // w == min(j // w for j in floor)])
    bottom = row_of([i for i in floor if i // w == max(j // w for j in floor)])
    renderer = PygameRenderer("rgb_array")
    renderer.banner = ["Episode over: goal complete", "tick 84 of 850", "Q to close"]
    height = None
    for agents, at_top in ((top, False), (bottom, True)):
        moved = type(world)(scene, 84, agents, world.hands, world.contents,
                            world.container_open, world.door_open)
        height = renderer.draw(moved, None, NAMES).get_height()
        box = renderer.last.banner
        assert (box.top == MARGIN) is at_top and (box.bottom == height - MARGIN) is not at_top
    renderer.close()
    env.close()


def test_a_crowded_room_keeps_its_name_off_the_agents_where_it_can():
    """With no row free for the whole name, it went to the room's best row, centred, right
    under an agent ('[2]throom' in `orgteams play` on the studio); it now goes to the
    widest stretch any row has free."""
    env = household_v0.parallel_env(layout="studio", num_agents=3)
    env.reset(seed=0)
    world = env.unwrapped.world
    scene, w = world.scene, world.scene.width
    bathroom = scene.layout.rooms.index("bathroom")
    cells = [i for i, r in enumerate(scene.room_of_cell) if r == bathroom and scene.floor[i]]
    rows = sorted({i // w for i in cells})
    first = min(i % w for i in cells)
    charlie = rows[len(rows) // 2] * w + first + 1
    alice = rows[-1] * w + first + 2
    bob = next(i for i in range(len(scene.floor)) if scene.floor[i]
               and scene.room_of_cell[i] not in (bathroom, -1))
    moved = type(world)(scene, 1, [alice, bob, charlie], world.hands, world.contents,
                        world.container_open, world.door_open)
    renderer = PygameRenderer("rgb_array")
    renderer.draw(moved, Overlay(you="agent_0"), ["Alice", "Bob", "Charlie"])
    label, cell = renderer.last.room_names[bathroom], renderer.last.cell
    for a in (alice, charlie):
        r, c = divmod(a, w)
        assert not label.collidepoint(int((c + 0.5) * cell), int((r + 0.5) * cell)), label
    env.close()
