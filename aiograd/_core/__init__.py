"""Layer 3, the graph core: ``Tensor``, ``Node`` (edges, AccumulateGrad, GraphRoot), saved
tensors, hooks, views, anomaly mode and the graph API's objects (``_graph``: gradient edges,
saved-tensor hooks).

It may import the base (``aiograd._base``) and the devices (``aiograd._devices``), never the ops,
the executors, the engine or the API. At run time its modules import each other in one order
(``_format_numbers``, ``_format``: a tensor's ``repr`` as torch prints it; ``_tensor_api``,
``_anomaly``, ``_tensor``, ``_saved``, ``_node``, ``_hooks``, ``_views``, ``_graph``: each only
modules before it); a type-only import may go either way inside the core
(a Tensor's ``grad_fn`` is a Node, a Node's ``apply`` takes Tensors), never out of it upward.
Where the core needs an op (``sum_to_size``, ``to``, ``clone``) it calls a Tensor method.
``_types`` (the type aliases of the ops' signatures) is for type checkers only. This package's
``__init__`` imports nothing.
"""
