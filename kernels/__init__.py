"""Device code for the as-of search, as plain Python (no numba import).

Each module exposes ``build(jit, ...)``: it wraps plain functions with the ``jit`` it is given
(``numba.njit``, ``numba.cuda.jit(device=True)`` or the identity) so that the logic for one
left row exists once and runs on every backend. Installed as ``asofgpu.kernels``.
"""
