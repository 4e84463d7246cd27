"""``attention``: fused scaled-dot-product attention forward (flash-style; see attention_kernels).

Shapes: q (B, Hq, Sq, D), k and v (B, Hkv, Sk, D) with Hkv dividing Hq (grouped-query
attention; Hkv == Hq is ordinary multi-head attention). Output (B, Hq, Sq, D) in q's dtype;
the optional logsumexp is float32 (B, Hq, Sq), natural log, of the scaled, masked scores.
``causal=True`` masks key j for query i when j > i (top-left alignment, exactly PyTorch's
``scaled_dot_product_attention(is_causal=True)``, also when Sq != Sk).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from oxicuda.driver.facts import current_device_facts, device_facts
from oxicuda.memory.array import DeviceArray, empty
from oxicuda.ptx.builder import LOG2_E
from oxicuda.ptx.launch_plan import KernelStep, LaunchPlan, PlanCache

from ._common import PTX_ELEMENT, as_float_array, contiguous, dtype_name_of, stream_of
from .attention_kernels import MAX_HEAD_DIM, THREADS, AttentionSimtSpec
from .attention_mma import BLOCK_Q, COPY_BYTES, DTYPES, HEAD_DIMS, AttentionMmaSpec
from .attention_mma import THREADS as MMA_THREADS
from .attention_wgmma import DTYPES as WGMMA_DTYPES
from .attention_wgmma import HEAD_DIMS as WGMMA_HEAD_DIMS
from .attention_wgmma import AttentionWgmmaSpec
from .attention_wgmma import choose_spec as wgmma_spec
from .attention_wgmma import step as wgmma_step

ALGOS = ("simt", "mma", "wgmma")
_INT31 = (1 << 31) - 1
_GRID_YZ = 65535


def _check(q: DeviceArray, k: DeviceArray, v: DeviceArray, op: str) -> tuple[int, int, int, int, int, int]:
    for name, a in (("q", q), ("k", k), ("v", v)):
        if len(a.shape) != 4:
            raise ValueError(f"{op}: {name} has shape {tuple(a.shape)}; it must be 4-D (batch, heads, seq, head_dim)")
    if k.dtype != q.dtype or v.dtype != q.dtype:
        raise TypeError(f"{op}: q, k, v have dtypes {dtype_name_of(q)}, {dtype_name_of(k)}, {dtype_name_of(v)}; "
                        f"they must match")
    b, hq, sq, d = q.shape
    if tuple(k.shape) != tuple(v.shape):
        raise ValueError(f"{op}: k has shape {tuple(k.shape)} but v has {tuple(v.shape)}; they must match")
    bk, hkv, sk, dk = k.shape
    if bk != b:
        raise ValueError(f"{op}: q has batch {b} but k/v have {bk}; they must match")
    if dk != d:
        raise ValueError(f"{op}: q has head_dim {d} but k/v have {dk}; they must match")
    if not 1 <= d <= MAX_HEAD_DIM:
        raise ValueError(f"{op}: head_dim {d} is not supported; allowed 1..{MAX_HEAD_DIM}")
    if hkv < 1 or hq % hkv:
        raise ValueError(f"{op}: q has {hq} heads and k/v have {hkv}; the k/v head count must divide "
                         f"the query head count (grouped-query attention)")
    if min(b, hq, sq, sk) < 1:
        raise ValueError(f"{op}: q {tuple(q.shape)} and k {tuple(k.shape)} must have no empty dimension")
    if hq > _GRID_YZ or b > _GRID_YZ:
        raise ValueError(f"{op}: q has batch {b} and {hq} heads; at most {_GRID_YZ} of each fit one launch "
                         f"(grid y/z); split the call")
    for name, a in (("q", q), ("k", k)):
        if math.prod(a.shape) > _INT31:
            raise ValueError(f"{op}: {name} has {math.prod(a.shape)} elements; at most {_INT31} are supported")
    return b, hq, sq, d, hkv, sk


def attention(q: object, k: object, v: object, causal: bool = False, scale: float | None = None,
              return_lse: bool = False, algo: str | None = None,
              out: DeviceArray | None = None, *, config: object = None) -> DeviceArray | tuple[DeviceArray, DeviceArray]:
    """``softmax(scale * q @ k^T + mask) @ v`` per (batch, head), fused (scores never stored).

    ``scale`` defaults to ``1/sqrt(head_dim)``. dtypes float32, float16, bfloat16 (computed in
    float32). ``return_lse``: also return the float32 logsumexp (B, Hq, Sq). ``algo``: None
    (dispatch: ``choose_algo``), ``"wgmma"`` (Hopper warpgroup MMA + TMA: float16/bfloat16, head_dim
    64 or 128, sm_90), ``"mma"`` (mma.sync tensor cores: float16/bfloat16, head_dim 64 or 128,
    sm_80+) or ``"simt"``; a forced algo that cannot run the problem raises ValueError. ``config``:
    an explicit kernel spec (any registered ``AttentionSimtSpec``, ``AttentionMmaSpec`` or
    ``AttentionWgmmaSpec`` of this dtype, head_dim, mask and lse; for sweeps), instead of
    ``algo``. ``out``: a C-contiguous array of q's shape and dtype to write into. Raises
    TypeError/ValueError on bad input before any launch.

    ``causal=True`` masks key ``j`` for query ``i`` when ``j > i``: the mask is aligned to the
    top left of the Sq x Sk score matrix, as ``torch.tril(torch.ones(Sq, Sk))``, which is what
    PyTorch's ``scaled_dot_product_attention(is_causal=True)`` does, whatever Sq and Sk are (every
    algo). So with Sq < Sk query ``i`` sees keys ``0..i`` only (keys past ``Sq - 1`` are seen by
    no query), and with Sq > Sk the rows ``i >= Sk - 1`` see every key. The bottom-right
    alignment of FlashAttention 2.1+ and of KV-cache decoding (query ``i`` at position
    ``Sk - Sq + i``) is not offered: a decoding step with one new query (Sq = 1) that should see
    all Sk cached keys calls with ``causal=False``; with ``causal=True`` it would see key 0 only.
    """
    op = "attention"
    qa, ka, va = (as_float_array(t, op, n) for t, n in ((q, "q"), (k, "k"), (v, "v")))
    b, hq, sq, d, hkv, sk = _check(qa, ka, va, op)
    if scale is None:
        scale = 1.0 / math.sqrt(d)
    try:
        scale = float(scale)
    except (TypeError, ValueError):
        raise TypeError(f"{op}: scale={scale!r} must be a number") from None
    if not math.isfinite(scale):
        raise ValueError(f"{op}: scale={scale!r} must be finite")
    if algo not in (None, *ALGOS):
        raise ValueError(f"{op}: algo={algo!r}; allowed: None, " + ", ".join(repr(a) for a in ALGOS))
    if out is not None:
        if not isinstance(out, DeviceArray):
            raise TypeError(f"{op}: out is a {type(out).__name__}; it must be an oxicuda DeviceArray")
        if tuple(out.shape) != tuple(qa.shape) or out.dtype != qa.dtype or not out.is_c_contiguous:
            raise ValueError(f"{op}: out has shape {tuple(out.shape)}, dtype {dtype_name_of(out)}; it must be a "
                             f"C-contiguous {dtype_name_of(qa)} array of shape {tuple(qa.shape)}")
    arch = device_facts().arch
    element = PTX_ELEMENT[dtype_name_of(qa)]
    if algo == "mma" and not mma_supports(element, d, arch):
        raise ValueError(f"{op}: algo='mma' needs float16/bfloat16 inputs with head_dim in {HEAD_DIMS} on sm_80+; "
                         f"got {dtype_name_of(qa)}, head_dim {d}, {arch}; use algo='simt' or None")
    if algo == "wgmma" and not wgmma_supports(element, d, arch):
        raise ValueError(f"{op}: algo='wgmma' needs float16/bfloat16 inputs with head_dim in {WGMMA_HEAD_DIMS} on "
                         f"sm_90; got {dtype_name_of(qa)}, head_dim {d}, {arch}; use algo='mma', 'simt' or None")
    qa, ka, va = contiguous(qa), contiguous(ka), contiguous(va)
    if config is not None:
        if algo is not None:
            raise ValueError(f"{op}: pass algo or config, not both (algo={algo!r})")
        _check_config(config, element, d, bool(causal), bool(return_lse), arch,
                      all(int(x.ptr) % COPY_BYTES == 0 for x in (qa, ka, va)))
    elif algo is None:
        algo = choose_algo(element, d, arch, aligned=all(int(x.ptr) % COPY_BYTES == 0 for x in (qa, ka, va)))
    elif algo in ("mma", "wgmma"):
        for name, x in (("q", qa), ("k", ka), ("v", va)):
            if int(x.ptr) % COPY_BYTES:
                raise ValueError(f"{op}: algo={algo!r} needs {COPY_BYTES}-byte aligned data; {name} starts at "
                                 f"{int(x.ptr):#x}; use algo='simt' or None")
    o = out if out is not None else empty(qa.shape, qa.dtype, stream=qa.stream or None)
    lse = empty((b, hq, sq), "float32", stream=qa.stream or None) if return_lse else None
    if config is None:
        config = choose_spec(algo, element, d, bool(causal), bool(return_lse), arch)
    problem = AttentionProblem(b, hq, sq, d, hkv, sk, config)
    device = current_device_facts()
    launch_plan = PLANS.get_or_build((problem, device.ordinal), lambda: plan(problem, device))
    launch_plan.run((qa.ptr, ka.ptr, va.ptr, o.ptr, 0 if lse is None else lse.ptr), (scale * LOG2_E,),
                    stream_of(o))
    return (o, lse) if return_lse else o


def choose_spec(algo: str, element: str, head_dim: int, causal: bool, lse: bool, arch: str):
    """The kernel of the resolved ``algo`` (a pure function of the problem and the arch)."""
    if algo == "wgmma":
        return wgmma_spec(element, head_dim, causal, lse)
    if algo == "mma":
        return AttentionMmaSpec(arch=_mma_arch(arch), dtype=element, head_dim=head_dim, causal=causal, lse=lse)
    return AttentionSimtSpec(arch=arch, dtype=element, head_dim=head_dim, causal=causal, lse=lse)


@dataclass(frozen=True)
class AttentionProblem:
    """One attention call: batch, query heads, query length, head_dim, key/value heads, key
    length, and the kernel spec that dispatch (or ``config=``) chose."""

    b: int
    hq: int
    sq: int
    d: int
    hkv: int
    sk: int
    spec: object


def plan(problem: AttentionProblem, device) -> LaunchPlan:
    """The launch plan of ``problem``: one fused kernel over (query blocks, heads, batch); ``run``
    takes pointers (q, k, v, o, lse or 0) and scalars (scale * log2(e),)."""
    p, spec = problem, problem.spec
    if isinstance(spec, AttentionWgmmaSpec):
        return LaunchPlan("attention", [wgmma_step(spec, p.b, p.hq, p.sq, p.hkv, p.sk)])
    sq, sk, hq, hkv, group = p.sq, p.sk, p.hq, p.hkv, p.hq // p.hkv

    def bind(ptr, s, ws):
        return (*ptr, sq, sk, hq, hkv, group, s[0])

    if isinstance(spec, AttentionMmaSpec):
        return LaunchPlan("attention", [KernelStep(spec, (-(-sq // BLOCK_Q), hq, p.b), MMA_THREADS, bind)])
    return LaunchPlan("attention", [KernelStep(spec, (-(-sq // spec.rows), hq, p.b), THREADS, bind)])


#: plans by (problem, device ordinal)
PLANS = PlanCache("attention")


def _check_config(config: object, element: str, head_dim: int, causal: bool, lse: bool, arch: str,
                  aligned: bool) -> None:
    """An explicit ``config=`` must be an attention spec for this dtype, head_dim, mask and lse,
    runnable on this device (tensor-core specs need 16-byte aligned data)."""
    kinds = (AttentionSimtSpec, AttentionMmaSpec, AttentionWgmmaSpec)
    if not isinstance(config, kinds):
        raise TypeError(f"attention: config={config!r}; it must be one of {[k.__name__ for k in kinds]}")
    got = (config.dtype, config.head_dim, config.causal, config.lse)
    if got != (element, head_dim, causal, lse):
        raise ValueError(f"attention: config {config.key()} has (dtype, head_dim, causal, lse) {got}; this call "
                         f"needs {(element, head_dim, causal, lse)}")
    if isinstance(config, AttentionWgmmaSpec) and _sm(arch) != 90:
        raise ValueError(f"attention: config {config.key()} needs sm_90; the device is {arch}")
    if isinstance(config, AttentionMmaSpec) and _sm(arch) < 80:
        raise ValueError(f"attention: config {config.key()} needs sm_80+; the device is {arch}")
    if not isinstance(config, AttentionSimtSpec) and not aligned:
        raise ValueError(f"attention: config {config.key()} needs {COPY_BYTES}-byte aligned q, k and v")


def _sm(arch: str) -> int:
    return int(arch[3:].rstrip("a"))


def _mma_arch(arch: str) -> str:
    sm = _sm(arch)
    return "sm_90" if sm >= 90 else "sm_86" if sm >= 86 else "sm_80"


def mma_supports(element: str, head_dim: int, arch: str) -> bool:
    """True when the tensor-core family computes this problem: f16/bf16, head_dim 64/128, sm_80+."""
    return element in DTYPES and head_dim in HEAD_DIMS and _sm(arch) >= 80


def wgmma_supports(element: str, head_dim: int, arch: str) -> bool:
    """True when the Hopper family computes this problem: f16/bf16, head_dim 64/128, sm_90."""
    return element in WGMMA_DTYPES and head_dim in WGMMA_HEAD_DIMS and _sm(arch) == 90


def choose_algo(element: str, head_dim: int, arch: str, aligned: bool = True) -> str:
    """Dispatch (a pure function of the problem and the device), for 16-byte aligned q/k/v with
    f16/bf16 and head_dim 64 or 128: ``"wgmma"`` on sm_90, ``"mma"`` on other sm_80+ devices;
    ``"simt"`` for everything else. Provisional: both tensor-core kernels are checked on the
    emulator; their H200 figures are not yet measured."""
    if aligned and wgmma_supports(element, head_dim, arch):
        return "wgmma"
    return "mma" if aligned and mma_supports(element, head_dim, arch) else "simt"


__all__ = ["AttentionProblem", "attention", "choose_algo", "choose_spec", "mma_supports", "plan", "wgmma_supports"]
