"""Differences the fuzzer accepts, keyed narrowly: (op name, kind of difference).

Kinds (see ``compare``): value, grad (on ordinary inputs), value_nonfinite, grad_nonfinite (only
where an input is NaN, inf, subnormal or huge), dtype, shape, outputs, grad_fn, missing (a name or
argument aiograd lacks), aiograd_raises, torch_raises, error_type.

Every entry is a documented deviation: its reason starts ``deviation #<section>:``, a section of
docs/torch-parity.md ("Deviations"), and tests/test_torch_deviations.py checks that each cited
section exists and runs an example of it. Anything else the fuzzer finds is a bug to fix.
"""

from __future__ import annotations

KNOWN: dict[tuple[str, str], str] = {
    ('type', 'value'): "deviation #type-strings-name-aiograd: Tensor.type() says 'aiograd.FloatTensor' where torch says 'torch.FloatTensor'",
    ('batch_norm', 'aiograd_raises'): "deviation #batch_norm-with-non-contiguous-parameters: torch's backward misreads a strided weight; running stats that share memory are refused",
    ('batch_norm', 'grad'): "deviation #batch_norm-with-non-contiguous-parameters: torch's backward misreads a strided weight; running stats that share memory are refused",
    ('batch_norm', 'grad_nonfinite'): 'deviation #results-that-depend-on-the-cpu: per-lane Welford statistics at non-finite inputs',
    ('batch_norm', 'value_nonfinite'): 'deviation #results-that-depend-on-the-cpu: per-lane Welford statistics at non-finite inputs',
    ('conv1d', 'value_nonfinite'): 'deviation #results-that-depend-on-the-cpu: inf weights meeting padding',
    ('linalg_pinv', 'value_nonfinite'): "deviation #results-that-depend-on-the-cpu: LAPACK's SVD of a matrix holding an infinity (NaN here, whatever torch's LAPACK returns)",
    ('linalg_pinv', 'grad_nonfinite'): "deviation #results-that-depend-on-the-cpu: LAPACK's SVD of a matrix holding an infinity, through the gradient",
    ('conv2d', 'value_nonfinite'): 'deviation #results-that-depend-on-the-cpu: inf weights meeting padding',
    ('conv_transpose2d', 'aiograd_raises'): "deviation #results-that-depend-on-the-cpu: an empty output torch's float32 backend accepts and its float64 one refuses",
    ('conv_transpose2d', 'grad_nonfinite'): 'deviation #results-that-depend-on-the-cpu: NaN placement of the convolution backend at inf weights',
    ('conv_transpose2d', 'value_nonfinite'): 'deviation #results-that-depend-on-the-cpu: NaN placement of the convolution backend at inf weights',
    ('elu', 'grad_nonfinite'): 'deviation #results-that-depend-on-the-cpu: vector lanes vs scalar tail at a NaN input',
    ('eq_', 'grad_fn'): 'deviation #integer-tensors-stay-out-of-autograd: torch makes an integer tensor require grad after this in-place op, then its backward hits an INTERNAL ASSERT',
    ('eq_', 'torch_raises'): 'deviation #integer-tensors-stay-out-of-autograd: torch makes an integer tensor require grad after this in-place op, then its backward hits an INTERNAL ASSERT',
    ('fill_', 'grad_fn'): 'deviation #integer-tensors-stay-out-of-autograd: torch makes an integer tensor require grad after this in-place op, then its backward hits an INTERNAL ASSERT',
    ('fill_', 'torch_raises'): 'deviation #integer-tensors-stay-out-of-autograd: torch makes an integer tensor require grad after this in-place op, then its backward hits an INTERNAL ASSERT',
    ('fmod', 'value_nonfinite'): 'deviation #results-that-depend-on-the-cpu: vector lanes vs scalar tail at a subnormal divisor',
    ('fmod_', 'value_nonfinite'): 'deviation #results-that-depend-on-the-cpu: vector lanes vs scalar tail at a subnormal divisor',
    ('ge_', 'grad_fn'): 'deviation #integer-tensors-stay-out-of-autograd: torch makes an integer tensor require grad after this in-place op, then its backward hits an INTERNAL ASSERT',
    ('ge_', 'torch_raises'): 'deviation #integer-tensors-stay-out-of-autograd: torch makes an integer tensor require grad after this in-place op, then its backward hits an INTERNAL ASSERT',
    ('group_norm', 'grad_nonfinite'): 'deviation #results-that-depend-on-the-cpu: per-lane Welford statistics (non-finite inputs, rounding at zero variance)',
    ('group_norm', 'torch_raises'): "deviation #group_norm-gradient-of-the-bias-alone: torch's backward fails when only the bias requires grad",
    ('group_norm', 'value'): 'deviation #results-that-depend-on-the-cpu: per-lane Welford statistics (non-finite inputs, rounding at zero variance)',
    ('group_norm', 'value_nonfinite'): 'deviation #results-that-depend-on-the-cpu: per-lane Welford statistics (non-finite inputs, rounding at zero variance)',
    ('gt_', 'grad_fn'): 'deviation #integer-tensors-stay-out-of-autograd: torch makes an integer tensor require grad after this in-place op, then its backward hits an INTERNAL ASSERT',
    ('gt_', 'torch_raises'): 'deviation #integer-tensors-stay-out-of-autograd: torch makes an integer tensor require grad after this in-place op, then its backward hits an INTERNAL ASSERT',
    ('hardtanh', 'grad_nonfinite'): 'deviation #results-that-depend-on-the-cpu: vector lanes vs scalar tail at a NaN bound',
    ('layer_norm', 'grad_nonfinite'): 'deviation #results-that-depend-on-the-cpu: per-lane Welford statistics at non-finite inputs',
    ('layer_norm', 'value_nonfinite'): 'deviation #results-that-depend-on-the-cpu: per-lane Welford statistics at non-finite inputs',
    ('le_', 'grad_fn'): 'deviation #integer-tensors-stay-out-of-autograd: torch makes an integer tensor require grad after this in-place op, then its backward hits an INTERNAL ASSERT',
    ('le_', 'torch_raises'): 'deviation #integer-tensors-stay-out-of-autograd: torch makes an integer tensor require grad after this in-place op, then its backward hits an INTERNAL ASSERT',
    ('linalg_cholesky', 'aiograd_raises'): 'deviation #results-that-depend-on-the-cpu: rounding at a singular matrix decides whether it is positive-definite',
    ('linalg_cholesky', 'torch_raises'): 'deviation #results-that-depend-on-the-cpu: rounding at a singular matrix decides whether it is positive-definite',
    ('linalg_cholesky', 'value'): 'deviation #results-that-depend-on-the-cpu: rounding at (nearly) singular matrices',
    ('linalg_det', 'grad_nonfinite'): 'deviation #results-that-depend-on-the-cpu: LU rounding at (nearly) singular matrices',
    ('linalg_det', 'value_nonfinite'): 'deviation #results-that-depend-on-the-cpu: LU rounding at (nearly) singular matrices',
    ('linalg_inv', 'grad'): 'deviation #results-that-depend-on-the-cpu: LU rounding at (nearly) singular matrices',
    ('linalg_inv', 'torch_raises'): 'deviation #results-that-depend-on-the-cpu: LU rounding decides whether a pivot of a singular matrix is exactly zero',
    ('linalg_qr', 'grad'): 'deviation #results-that-depend-on-the-cpu: factors of a rank-deficient or non-finite matrix are not unique',
    ('linalg_qr', 'value'): 'deviation #results-that-depend-on-the-cpu: factors of a rank-deficient or non-finite matrix are not unique',
    ('linalg_qr', 'value_nonfinite'): 'deviation #results-that-depend-on-the-cpu: factors of a rank-deficient or non-finite matrix are not unique',
    ('linalg_slogdet', 'grad'): 'deviation #results-that-depend-on-the-cpu: LU rounding at (nearly) singular matrices',
    ('linalg_slogdet', 'grad_nonfinite'): 'deviation #results-that-depend-on-the-cpu: LU rounding at (nearly) singular matrices',
    ('linalg_slogdet', 'value'): 'deviation #results-that-depend-on-the-cpu: LU rounding at (nearly) singular matrices',
    ('linalg_solve', 'aiograd_raises'): "deviation #results-that-depend-on-the-cpu: LU rounding at (nearly) singular matrices: the backward's solve meets an exactly zero pivot",
    ('linalg_solve', 'grad_nonfinite'): 'deviation #results-that-depend-on-the-cpu: LU rounding at (nearly) singular matrices',
    ('linalg_svd', 'grad'): 'deviation #results-that-depend-on-the-cpu: singular vectors at a zero singular value are not unique',
    ('linalg_svd', 'grad_nonfinite'): 'deviation #svd-of-a-non-finite-matrix: NaN factors for an infinite entry',
    ('logsumexp', 'torch_raises'): 'deviation #logsumexp-over-no-dims: torch fails on dim=() of a tensor with dims',
    ('lt_', 'grad_fn'): 'deviation #integer-tensors-stay-out-of-autograd: torch makes an integer tensor require grad after this in-place op, then its backward hits an INTERNAL ASSERT',
    ('lt_', 'torch_raises'): 'deviation #integer-tensors-stay-out-of-autograd: torch makes an integer tensor require grad after this in-place op, then its backward hits an INTERNAL ASSERT',
    ('masked_fill_', 'grad_fn'): 'deviation #integer-tensors-stay-out-of-autograd: torch makes an integer tensor require grad after this in-place op, then its backward hits an INTERNAL ASSERT',
    ('masked_fill_', 'torch_raises'): 'deviation #integer-tensors-stay-out-of-autograd: torch makes an integer tensor require grad after this in-place op, then its backward hits an INTERNAL ASSERT',
    ('ne_', 'grad_fn'): 'deviation #integer-tensors-stay-out-of-autograd: torch makes an integer tensor require grad after this in-place op, then its backward hits an INTERNAL ASSERT',
    ('ne_', 'torch_raises'): 'deviation #integer-tensors-stay-out-of-autograd: torch makes an integer tensor require grad after this in-place op, then its backward hits an INTERNAL ASSERT',
    ('remainder', 'value_nonfinite'): 'deviation #results-that-depend-on-the-cpu: vector lanes vs scalar tail at a subnormal divisor',
    ('scaled_dot_product_attention', 'grad_nonfinite'): "deviation #attention-rows-that-are-fully-masked: aiograd's query gradient is 0 for a fully masked row",
    ('setitem', 'grad_fn'): 'deviation #integer-tensors-stay-out-of-autograd: torch makes an integer tensor require grad after this in-place op, then its backward hits an INTERNAL ASSERT',
    ('setitem', 'torch_raises'): 'deviation #integer-tensors-stay-out-of-autograd: torch makes an integer tensor require grad after this in-place op, then its backward hits an INTERNAL ASSERT',
    ('tril_', 'torch_raises'): "deviation #writing-into-an-expanded-view: torch's backward through a write into an expanded view fails",
    ('triu_', 'torch_raises'): "deviation #writing-into-an-expanded-view: torch's backward through a write into an expanded view fails",
    ('zero_', 'torch_raises'): "deviation #writing-into-an-expanded-view: torch's backward through a write into an expanded view fails",
}
