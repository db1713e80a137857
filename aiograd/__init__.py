"""aiograd: reverse-mode autograd on numpy, with an asyncio backward engine.

    loss = (w * x).sum()
    await loss.backward()

Layers, bottom up, each private one a package whose docstring says what it may import. A module
imports only from its own layer and those below, never in a cycle (function-level imports
included, and type-only imports across layers too: ``tests/test_layers.py`` checks it from the
source), and no module sets another module's globals:

1. base, ``_base``: dtypes, the default random generator, cost estimates, grad mode, which
   GraphTask is running (for the op rules that ask);
2. devices, ``_devices``: the device registry (``_device``: interned device objects, the
   device-type registry), one module per device type (``cpu``, ``sim``, ``cuda``, ``simcuda``,
   loaded by name when its first device is made) and CuPy's runtime (``_cuda_runtime``: CuPy
   loaded on first use, CUDA streams and events);
3. graph core, ``_core``, in this run-time import order: ``_types`` (the type aliases of the
   ops' signatures, for type checkers), ``_format``, ``_tensor_api`` (Tensor's methods as type
   checkers see them, generated from the ops), ``_anomaly``, ``_tensor``, ``_saved``, ``_node``
   (nodes, edges, AccumulateGrad, the hooks a node carries), ``_hooks`` (running hooks),
   ``_views``, ``_graph`` (gradient edges, saved-tensor hooks); where it needs an op
   (``sum_to_size``, ``to``, ``clone``) it calls a Tensor method;
4. ops: ``_ops`` (the op registry and one module per family of rules), ``function``
   (``Function``, a user's op: it needs only the graph core and the ops, and layers such as
   ``nn.LSTM`` define their fused steps with it) and ``nn`` (its functional ops, ``Module`` and
   the layers, ``init``, ``utils``: weights in files);
5. executors: ``executors`` (where heavy nodes' math runs: threads, or shipped to a Dask
   cluster, which needs the nodes' classes; a device type names its default executor, which
   the engine makes);
6. engine: ``_engine`` (its ``__init__`` maps one gradient's way through it);
7. API: ``_api`` (``backward``/``grad``, checkpointing, the factories, ``_tensor_methods``
   binding the ops onto Tensor as methods and operators, the trio bridge, the coroutine-test
   runner) and the public modules: ``functional`` (vjp, jvp, jacobian, hessian,
   hvp, vhp), ``graph`` (``torch.autograd.graph``), ``sync``, ``testing``, ``utils``, ``cuda``
   (``torch.cuda``'s API), ``optim``, ``linalg``, ``serving`` (dynamic batching, the HTTP
   service), ``viz`` (the backward graph as Graphviz DOT), ``profiler`` (traces and progress of
   backward calls), ``distributed`` (data-parallel gradients on a Dask cluster),
   ``pytest_plugin`` (pytest's entry point; ``import aiograd`` does not import it),
   ``accelerator`` (``torch.accelerator``: CUDA through CuPy), ``backends`` (``torch.backends``'
   flags, kept and ignored), ``amp`` (``GradScaler``; ``autocast``, a no-op when disabled), ``autograd``
   (``torch.autograd``'s namespace, re-exporting the names above) and this module.

Public
submodules: ``aiograd.nn`` (``Module``, layers, ``nn.functional``, ``nn.init``, ``nn.utils``),
``aiograd.optim``, ``aiograd.linalg``, ``aiograd.functional`` (vjp, jacobian, hessian, ...),
``aiograd.testing``, ``aiograd.cuda`` (CUDA devices, streams, events), ``aiograd.function``
(custom Functions), ``aiograd.graph`` (``torch.autograd.graph``), ``aiograd.executors``,
``aiograd.sync`` (blocking backward/grad), ``aiograd.serving`` (dynamic batching of concurrent
requests), ``aiograd.viz`` (graph pictures), ``aiograd.profiler``
(traces, progress), ``aiograd.distributed`` (Dask), ``aiograd.utils.checkpoint`` and
``aiograd.pytest_plugin`` (loaded by pytest), ``aiograd.accelerator``, ``aiograd.backends``
(``cudnn``, ``cuda``, ``mps``, ``cpu``) ``aiograd.amp`` (``GradScaler``, ``autocast``) and ``aiograd.autograd`` (``torch.autograd``'s
names: ``grad``, ``Function``, ``functional``, ``graph``, ``gradcheck``, ...).
``aiograd.compile`` returns its model unchanged (aiograd has no compiler). Every public name is re-exported
here explicitly and listed in ``__all__``; everything else is internal.
"""

from . import (
    accelerator,
    amp,
    autograd,
    backends,
    cuda,
    distributed,
    distributions,
    executors,
    func,
    function,
    functional,
    graph,
    jit,
    linalg,
    nn,
    optim,
    profiler,
    serving,
    special,
    sync,
    testing,
    utils,
    viz,
)
from ._api import (
    _tensor_methods,  # noqa: F401  (binds the ops as Tensor methods and operators)
    _threads,
    _trio_bridge,  # noqa: F401  (installs the backward path for trio tasks)
)
from ._api._autograd import backward, grad
from ._api._checkpoint import checkpoint, checkpoint_sequential
from ._api._compile import compile
from ._api._factories import (
    Generator,
    arange,
    as_tensor,
    bernoulli,
    empty,
    empty_like,
    eye,
    from_dlpack,
    from_numpy,
    full,
    full_like,
    get_rng_state,
    initial_seed,
    linspace,
    manual_seed,
    multinomial,
    normal,
    ones,
    ones_like,
    rand,
    rand_like,
    randint,
    randint_like,
    randn,
    randn_like,
    randperm,
    seed,
    set_rng_state,
    tensor,
    zeros,
    zeros_like,
)
from ._api._precision import get_float32_matmul_precision, set_float32_matmul_precision
from ._api._runner import run
from ._api._serialization import load, save
from ._api._threads import (
    get_num_interop_threads,
    get_num_threads,
    set_num_interop_threads,
    set_num_threads,
)
from ._api._torch_functions import (
    allclose,
    can_cast,
    cosine_similarity,
    detach,
    equal,
    is_complex,
    is_floating_point,
    numel,
    pairwise_distance,
    positive,
    promote_types,
    result_type,
    typename,
)
from ._base._dtypes import (
    bool_,
    double,
    float16,
    float32,
    float64,
    get_default_dtype,
    half,
    int8,
    int16,
    int32,
    int64,
    long,
    set_default_dtype,
    short,
    uint8,
)
from ._base._dtypes import bool_ as bool  # torch's names that are Python builtins' too
from ._base._dtypes import float_ as float
from ._base._dtypes import int_ as int
from ._base._finfo import finfo, iinfo
from ._base._grad_mode import (
    enable_grad,
    inference_mode,
    is_grad_enabled,
    is_inference_mode_enabled,
    no_grad,
    set_grad_enabled,
)
from ._base._size import Size
from ._core._anomaly import (
    detect_anomaly,
    is_anomaly_check_nan_enabled,
    is_anomaly_enabled,
    set_detect_anomaly,
)
from ._core._format import set_printoptions
from ._core._node import Node
from ._core._tensor import Tensor, is_tensor
from ._devices._device import device, get_default_device, set_default_device
from ._engine import (
    Engine,
    EngineStatistics,
    are_deterministic_algorithms_enabled,
    get_engine,
    get_executor,
    get_shuffle_seed,
    queue_callback,
    set_executor,
    set_shuffle_seed,
    use_deterministic_algorithms,
)

# -- the ops, generated by tools/gen_tensor_api.py from the registry (do not edit) --
from ._ops.batched_products import bmm
from ._ops.binary_math import arctan2, atan2, fmod, hypot, logaddexp, remainder, xlogy
from ._ops.bitwise import (
    bitwise_and,
    bitwise_left_shift,
    bitwise_not,
    bitwise_or,
    bitwise_right_shift,
    bitwise_xor,
    logical_and,
    logical_not,
    logical_or,
    logical_xor,
)
from ._ops.convenience import norm, square, std, t
from ._ops.distances import addr, cdist, dist, pdist, renorm
from ._ops.elementwise import (
    add,
    div,
    divide,
    eq,
    ge,
    greater,
    greater_equal,
    gt,
    le,
    less,
    less_equal,
    lt,
    mul,
    multiply,
    ne,
    not_equal,
    pow,
    sub,
    subtract,
    true_divide,
    where,
)
from ._ops.elementwise_more import (
    copysign,
    deg2rad,
    exp2,
    float_power,
    fmax,
    fmin,
    heaviside,
    logit,
    nextafter,
    rad2deg,
    sgn,
    signbit,
    sinc,
)
from ._ops.indexing import gather, index_select
from ._ops.joining import (
    cartesian_prod,
    cat,
    chunk,
    concat,
    concatenate,
    meshgrid,
    repeat_interleave,
    split,
    split_with_sizes,
    stack,
    unbind,
)
from ._ops.joining_more import (
    atleast_1d,
    atleast_2d,
    atleast_3d,
    block_diag,
    broadcast_shapes,
    broadcast_tensors,
    column_stack,
    diag_embed,
    diff,
    dstack,
    fliplr,
    flipud,
    hstack,
    kron,
    rot90,
    tensor_split,
    unravel_index,
    vstack,
)
from ._ops.linalg import matmul, mm
from ._ops.linalg_compat import (
    cholesky,
    cross,
    det,
    inverse,
    logdet,
    matrix_exp,
    matrix_power,
    pinverse,
    qr,
    slogdet,
    svd,
)
from ._ops.pointwise import addcdiv, addcmul, clamp, clip, lerp, masked_fill, maximum, minimum
from ._ops.predicates import isclose, isin
from ._ops.products import dot, einsum, outer, tensordot, trace
from ._ops.random_poisson import poisson
from ._ops.rearrange import (
    diag,
    diagonal,
    flip,
    moveaxis,
    movedim,
    narrow,
    roll,
    select,
    tile,
    tril,
    triu,
    unflatten,
)
from ._ops.reduction import argmax, argmin, max, mean, min, prod, sum, var
from ._ops.reduction_extra import all, amax, amin, any, bincount, count_nonzero, histc
from ._ops.rounding import floor_divide, round
from ._ops.scans import cumprod, cumsum
from ._ops.scans_more import aminmax, cummax, cummin, logcumsumexp
from ._ops.scatter import index_add, masked_select, nonzero, scatter, scatter_add, take_along_dim
from ._ops.scatter_more import (
    diagonal_scatter,
    index_copy,
    index_fill,
    index_put,
    masked_scatter,
    select_scatter,
    slice_scatter,
    take,
)
from ._ops.scatter_reduce import scatter_reduce
from ._ops.search import bucketize, logspace, searchsorted, tril_indices, triu_indices
from ._ops.shape import (
    broadcast_to,
    expand,
    flatten,
    permute,
    reshape,
    squeeze,
    sum_to_size,
    swapdims,
    transpose,
    unsqueeze,
)
from ._ops.softmax import log_softmax, logsumexp, softmax
from ._ops.sorting import argsort, kthvalue, median, sort, topk, unique, unique_consecutive
from ._ops.special import erf, erfc
from ._ops.special_gamma import digamma, erfinv, lgamma, mvlgamma, polygamma
from ._ops.statistics import mode, nanmean, nanmedian, nansum, std_mean, var_mean
from ._ops.statistics_more import (
    corrcoef,
    cov,
    cumulative_trapezoid,
    nanquantile,
    quantile,
    trapezoid,
    trapz,
)
from ._ops.torch_aliases import adjoint, clamp_max, clamp_min, ravel, rsub, swapaxes
from ._ops.unary_math import (
    abs,
    absolute,
    acos,
    asin,
    atan,
    ceil,
    clone,
    cos,
    cosh,
    exp,
    expm1,
    fix,
    floor,
    frac,
    isfinite,
    isinf,
    isnan,
    isneginf,
    isposinf,
    log,
    log1p,
    log2,
    log10,
    nan_to_num,
    neg,
    negative,
    reciprocal,
    relu,
    rsqrt,
    sigmoid,
    sign,
    sin,
    sinh,
    sqrt,
    tan,
    tanh,
    trunc,
)
from ._ops.vector_products import addbmm, addmm, addmv, baddbmm, inner, mv, vdot
from ._ops.windows import bartlett_window, blackman_window, hamming_window, hann_window, histogram

# -- end of the generated imports --
from .amp import autocast
from .function import Function
from .jit import _assert  # noqa: F401  (torch._assert, used by traced model code)

__version__ = "0.1.0"

__all__ = [
    # tensors and factories
    "Tensor", "device", "set_default_device", "get_default_device", "is_tensor", "tensor", "as_tensor", "from_numpy", "from_dlpack", "zeros", "ones", "full", "empty", "arange",
    "linspace", "eye", "rand", "randn", "zeros_like", "ones_like", "full_like", "empty_like",
    "rand_like", "randn_like", "manual_seed",
    # randomness
    "Generator", "seed", "initial_seed", "get_rng_state", "set_rng_state", "randint", "randint_like", "randperm",
    "bernoulli", "multinomial", "normal",
    # dtypes (numpy dtypes, with torch's names)
    "float16", "half", "float32", "float", "float64", "double", "int8", "int16", "short", "int32", "int",
    "int64", "long", "uint8", "bool_", "bool", "finfo", "iinfo", "Size",
    "set_default_dtype", "get_default_dtype", "set_printoptions",
    # autograd
    "backward", "grad", "no_grad", "enable_grad", "set_grad_enabled", "is_grad_enabled",
    "inference_mode", "is_inference_mode_enabled", "Node", "queue_callback", "detect_anomaly",
    "set_detect_anomaly", "is_anomaly_enabled", "is_anomaly_check_nan_enabled",
    "Engine", "EngineStatistics", "get_engine", "run", "Function", "set_executor", "get_executor",
    "use_deterministic_algorithms", "are_deterministic_algorithms_enabled", "set_shuffle_seed",
    "get_shuffle_seed",
    "checkpoint", "checkpoint_sequential",
    # training-script namespaces: compile is the identity, autocast a no-op when disabled
    "compile", "autocast",
    # saving and loading (torch.save/torch.load; reads torch checkpoints without torch)
    "save", "load",
    # submodules
    "cuda", "executors", "func", "function", "functional", "graph", "nn", "sync", "testing", "utils",
    "optim", "serving", "viz", "profiler", "distributed", "distributions", "linalg", "accelerator", "backends", "amp", "autograd", "jit", "special",
    "get_float32_matmul_precision", "set_float32_matmul_precision",
    "get_num_threads", "set_num_threads", "get_num_interop_threads", "set_num_interop_threads",
]

# torch's functions that are no registered op (Python results; positive returns its input)
__all__ += ["allclose", "can_cast", "cosine_similarity", "detach", "equal", "is_complex", "is_floating_point", "numel",
            "pairwise_distance", "positive", "promote_types", "result_type", "typename"]

# -- the ops' names, generated by tools/gen_tensor_api.py (do not edit) --
__all__ += [
    "abs", "absolute", "acos", "add", "addbmm", "addcdiv", "addcmul", "addmm", "addmv", "addr",
    "adjoint", "all", "amax", "amin", "aminmax", "any", "arctan2", "argmax", "argmin", "argsort",
    "asin", "atan", "atan2", "atleast_1d", "atleast_2d", "atleast_3d", "baddbmm", "bartlett_window",
    "bincount", "bitwise_and", "bitwise_left_shift", "bitwise_not", "bitwise_or",
    "bitwise_right_shift", "bitwise_xor", "blackman_window", "block_diag", "bmm",
    "broadcast_shapes", "broadcast_tensors", "broadcast_to", "bucketize", "cartesian_prod", "cat",
    "cdist", "ceil", "cholesky", "chunk", "clamp", "clamp_max", "clamp_min", "clip", "clone",
    "column_stack", "concat", "concatenate", "copysign", "corrcoef", "cos", "cosh", "count_nonzero",
    "cov", "cross", "cummax", "cummin", "cumprod", "cumsum", "cumulative_trapezoid", "deg2rad",
    "det", "diag", "diag_embed", "diagonal", "diagonal_scatter", "diff", "digamma", "dist", "div",
    "divide", "dot", "dstack", "einsum", "eq", "erf", "erfc", "erfinv", "exp", "exp2", "expand",
    "expm1", "fix", "flatten", "flip", "fliplr", "flipud", "float_power", "floor", "floor_divide",
    "fmax", "fmin", "fmod", "frac", "gather", "ge", "greater", "greater_equal", "gt",
    "hamming_window", "hann_window", "heaviside", "histc", "histogram", "hstack", "hypot",
    "index_add", "index_copy", "index_fill", "index_put", "index_select", "inner", "inverse",
    "isclose", "isfinite", "isin", "isinf", "isnan", "isneginf", "isposinf", "kron", "kthvalue",
    "le", "lerp", "less", "less_equal", "lgamma", "log", "log10", "log1p", "log2", "log_softmax",
    "logaddexp", "logcumsumexp", "logdet", "logical_and", "logical_not", "logical_or",
    "logical_xor", "logit", "logspace", "logsumexp", "lt", "masked_fill", "masked_scatter",
    "masked_select", "matmul", "matrix_exp", "matrix_power", "max", "maximum", "mean", "median",
    "meshgrid", "min", "minimum", "mm", "mode", "moveaxis", "movedim", "mul", "multiply", "mv",
    "mvlgamma", "nan_to_num", "nanmean", "nanmedian", "nanquantile", "nansum", "narrow", "ne",
    "neg", "negative", "nextafter", "nonzero", "norm", "not_equal", "outer", "pdist", "permute",
    "pinverse", "poisson", "polygamma", "pow", "prod", "qr", "quantile", "rad2deg", "ravel",
    "reciprocal", "relu", "remainder", "renorm", "repeat_interleave", "reshape", "roll", "rot90",
    "round", "rsqrt", "rsub", "scatter", "scatter_add", "scatter_reduce", "searchsorted", "select",
    "select_scatter", "sgn", "sigmoid", "sign", "signbit", "sin", "sinc", "sinh", "slice_scatter",
    "slogdet", "softmax", "sort", "split", "split_with_sizes", "sqrt", "square", "squeeze", "stack",
    "std", "std_mean", "sub", "subtract", "sum", "sum_to_size", "svd", "swapaxes", "swapdims", "t",
    "take", "take_along_dim", "tan", "tanh", "tensor_split", "tensordot", "tile", "topk", "trace",
    "transpose", "trapezoid", "trapz", "tril", "tril_indices", "triu", "triu_indices",
    "true_divide", "trunc", "unbind", "unflatten", "unique", "unique_consecutive", "unravel_index",
    "unsqueeze", "var", "var_mean", "vdot", "vstack", "where", "xlogy",
]
# -- end of the generated names --

# AIOGRAD_NUM_THREADS=n caps numpy's BLAS threads as set_num_threads(n) does, from the start.
_threads.apply_environment()
