"""cubejit's IR: typed, structured kernels that the frontend builds and every backend lowers.

``nodes`` holds the nodes and what they mean, ``types`` the scalar and array types,
``printer`` the text form (``str(kernel_ir)``), ``validate`` the rules a backend may assume.
The package itself exports nothing: import from those modules.
"""
