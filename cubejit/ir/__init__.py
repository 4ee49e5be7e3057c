"""cubejit's IR: typed, structured kernels that the frontend builds and every backend lowers.

``nodes`` holds the nodes and what they mean, ``types`` the scalar and array types,
``values`` what each declared name is (kind, item, memory space), ``traversal`` the one walk
(children and rebuilding derived from the node dataclasses), ``traits`` what a statement reads,
writes and waits for, ``uniformity`` which values every unit of a cube or plane shares,
``capabilities`` what a backend declares it runs, ``printer`` the text form
(``str(kernel_ir)``), ``validate`` the rules a backend may assume.
The package itself exports nothing: import from those modules.
"""
