"""The household in JAX (the optional ``jax`` extra): the batched rules as pure functions.

* :mod:`.core` (``JaxCore``): one household's tick, masks and observations as pure
  functions of fixed-shape arrays, ``vmap``-ed and ``jit``-compiled; the numpy-driven
  ``household_v0.vector_env(backend="jax")`` steps with it.
* :mod:`.env` (``HouseholdJaxEnv``, made by ``household_v0.jax_env(...)``): the whole
  env as pure ``reset(key)`` / ``step(key, state, actions)`` in the shape of JaxMARL's
  ``MultiAgentEnv``, built on the same per-household functions.

Importing this package imports no JAX; each module raises
:class:`~orgteams.errors.MissingExtraError` naming the extra when JAX is missing. (Not
named ``jax``: a folder of that name would stand in for the library wherever it lies
on ``sys.path`` without JAX installed, as ``tests/envs/vector/`` does under pytest.)
"""
