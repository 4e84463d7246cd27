"""KernelBuilder: emitted PTX text, ptxas acceptance on sm_86/sm_90(a), and misuse errors."""

from __future__ import annotations

import importlib.util
import re
import struct

import pytest

from oxicuda.ptx import ir
from oxicuda.ptx.builder import KernelBuilder, matrix_descriptor_bits
from oxicuda.ptx.validate import PtxasNotFound, assemble_many, find_ptxas

try:
    find_ptxas()
    HAVE_PTXAS = True
except PtxasNotFound:
    HAVE_PTXAS = False

needs_ptxas = pytest.mark.skipif(not HAVE_PTXAS, reason="ptxas not installed")


# -- representative kernels -----------------------------------------------------------------------
def vector_add(arch: str, math: str = "precise") -> KernelBuilder:
    kb = KernelBuilder("vadd", arch=arch, math=math)
    a, b, c = kb.param_ptr("a"), kb.param_ptr("b"), kb.param_ptr("c")
    n = kb.param("n", "u32")
    i = kb.mad(kb.ctaid(), kb.ntid(), kb.tid())
    with kb.if_(kb.setp("lt", i, n)):
        x = kb.ld("global", "f32", kb.addr(a, i, 4))
        y = kb.ld("global", "f32", kb.addr(b, i, 4))
        kb.st("global", kb.addr(c, i, 4), kb.add(x, y))
    return kb


def shared_reduction(arch: str) -> KernelBuilder:
    """Block sum: shuffles within warps, one partial per warp in shared, atomic add to out."""
    kb = KernelBuilder("block_sum", arch=arch)
    x, out = kb.param_ptr("x"), kb.param_ptr("out")
    n = kb.param("n", "u32")
    kb.maxntid(256)
    tid = kb.tid()
    i = kb.mad(kb.ctaid(), kb.ntid(), tid)
    v = kb.mov(0.0, "f32")
    with kb.if_(kb.setp("lt", i, n)):
        kb.ld("global", "f32", kb.addr(x, i, 4), nc=True)
        kb.assign(v, kb.ld("global", "f32", kb.addr(x, i, 4)))
    for shift in (16, 8, 4, 2, 1):
        kb.add(v, kb.shfl_sync("bfly", v, shift), out=v)
    partial = kb.shared("partial", "f32", 8, align=4)
    lane = kb.and_(tid, 31)
    warp = kb.shr(tid, 5)
    with kb.if_(kb.setp("eq", lane, 0)):
        kb.st("shared", kb.addr(kb.shared_addr(partial), warp, 4), v)
    kb.bar_sync()
    with kb.if_(kb.setp("lt", tid, 8)):
        w = kb.ld("shared", "f32", kb.addr(kb.shared_addr(partial), tid, 4))
        for shift in (4, 2, 1):
            kb.add(w, kb.shfl_sync("down", w, shift, mask=0xFF), out=w)
        with kb.if_(kb.setp("eq", tid, 0)):
            kb.red("global", "add", "f32", out, w)
    ballot = kb.vote_sync("ballot", kb.setp("gt", v, 0.0))
    if int(arch[3:5]) >= 80:
        kb.redux_sync("add", ballot)
    return kb


def mma_tile(arch: str, extras: bool = True) -> KernelBuilder:
    """One warp: cp.async a 16x16 f16 A tile and 16x8 B tile to shared, ldmatrix, mma.sync twice
    (c = 2 * a @ b, in the D fragment order, 4 f32 per lane); ``extras`` adds tf32/f64 mma and
    bf16x2 packing (assembled, not computed)."""
    kb = KernelBuilder("mma_tile", arch=arch)
    a, b, c = kb.param_ptr("a"), kb.param_ptr("b"), kb.param_ptr("c")
    sa = kb.shared("sa", "f16", 256, align=128)
    sb = kb.shared("sb", "f16", 128, align=128)
    lane = kb.laneid()
    # 32 lanes x 16 bytes = 512 bytes = the A tile; the first 16 lanes copy B
    kb.cp_async(kb.addr(kb.shared_addr(sa), lane, 16), kb.addr(a, lane, 16), 16, cache="cg")
    with kb.if_(kb.setp("lt", lane, 16)):
        kb.cp_async(kb.addr(kb.shared_addr(sb), lane, 16), kb.addr(b, lane, 16), 16, src_size=16)
    kb.cp_async_commit()
    kb.cp_async_wait(0)
    kb.bar_sync()
    row = kb.and_(lane, 15)
    col8 = kb.shr(lane, 4)
    a_addr = kb.add(kb.addr(kb.shared_addr(sa), row, 32), kb.shl(col8, 4))
    a_regs = kb.ldmatrix(4, a_addr)
    b_regs = kb.ldmatrix(2, kb.addr(kb.shared_addr(sb), row, 16), trans=True)
    zero = kb.mov(0.0, "f32")
    d = kb.mma_sync("m16n8k16", "f16", "f16", "f32", a_regs, b_regs, [zero] * 4)
    d = kb.mma_sync("m16n8k16", "f16", "f16", "f32", a_regs, b_regs, d, d=d)
    kb.st("global", kb.addr(c, lane, 16), d)
    if not extras:
        return kb
    t0, t1 = kb.cvt(d[0], "tf32"), kb.cvt(d[1], "tf32")
    t2, t3 = kb.cvt(d[2], "tf32"), kb.cvt(d[3], "tf32")
    e = kb.mma_sync("m16n8k8", "tf32", "tf32", "f32", [t0, t1, t2, t3], [t0, t1], list(d))
    f64 = kb.cvt(e[0], "f64")
    g = kb.mma_sync("m8n8k4", "f64", "f64", "f64", [f64], [f64], [f64, f64])
    kb.st("global", c, g[0], offset=512)
    kb.st("global", c, kb.cvt_pack(e[0], e[1], "bf16x2"), offset=520)
    return kb


def hopper_skeleton(arch: str = "sm_90a") -> KernelBuilder:
    """A TMA load of a 64x16 f16 tile into shared, mbarrier wait, then one wgmma m64n64k16."""
    kb = KernelBuilder("hopper_tile", arch=arch)
    tmap = kb.param_array("tmap_a")
    out = kb.param_ptr("out")
    smem = kb.dynamic_shared("smem", 64 * 1024, align=1024)
    bar = kb.shared("bar", "b64", 1, align=8)
    tid = kb.tid()
    with kb.if_(kb.setp("eq", tid, 0)):
        kb.mbarrier_init(bar, 1)
        kb.fence_proxy_async()
        kb.mbarrier_arrive_expect_tx(bar, 64 * 16 * 2)
        kb.cp_async_bulk_tensor(2, smem, tmap, [0, kb.bitcast(kb.ctaid(), "s32")], bar)
    kb.bar_sync()
    kb.mbarrier_wait_parity(bar, 0)
    base = kb.shared_addr(smem)
    desc_a = kb.wgmma_descriptor(base, lbo=128, sbo=256)
    desc_b = kb.wgmma_descriptor(kb.add(base, 2048), lbo=128, sbo=256, swizzle="128B")
    kb.wgmma_fence()
    d = kb.wgmma_mma_async(64, "f16", None, desc_a, desc_b, scale_d=0)
    d = kb.wgmma_mma_async(64, "f16", d, desc_a, desc_b, scale_d=1)
    kb.wgmma_commit_group()
    kb.wgmma_wait_group(0)
    for j in kb.unroll(4):
        kb.st("global", kb.addr(out, tid, 16), d[4 * j : 4 * j + 4], offset=2048 * j)
    return kb


def math_features(arch: str, math: str) -> KernelBuilder:
    kb = KernelBuilder("math_features", arch=arch, math=math)
    p = kb.param_ptr("p")
    xf = kb.ld("global", "f32", p)
    xd = kb.ld("global", "f64", p, offset=8)
    xs = kb.ld("global", "s32", p, offset=16)
    xb = kb.ld("global", "u8", p, offset=20)
    vals = [
        kb.div(xf, 3.0),
        kb.rcp(xf),
        kb.sqrt(xf),
        kb.rsqrt(xf),
        kb.exp(xf),
        kb.log(xf),
        kb.sin(xf),
        kb.cos(xf),
        kb.floor(xf),
        kb.ceil(xf),
        kb.trunc(xf),
        kb.round(xf),
        kb.abs(xf),
        kb.neg(xf),
        kb.min(xf, 1.0),
        kb.max(xf, -1.0),
        kb.sub(xf, 2.0),
        kb.mul(xf, 0.5),
        kb.fma(xf, xf, xf),
        kb.cvt(xs, "f32"),
        kb.cvt(xd, "f32"),
        kb.cvt(xb, "f32"),
        kb.cvt(kb.cvt(kb.cvt(xf, "f16"), "f32"), "f32", rnd="rni"),
        kb.cvt(kb.cvt(xf, "bf16"), "f32"),
        kb.selp(xf, 0.0, kb.setp("gtu", xf, 0.0)),
    ]
    acc = kb.mov(0.0, "f32")
    for v in vals:
        kb.add(acc, v, out=acc)
    kb.st("global", p, acc, offset=24)
    dvals = [
        kb.div(xd, 3.0),
        kb.rcp(xd),
        kb.sqrt(xd),
        kb.rsqrt(xd),
        kb.fma(xd, xd, 1.0),
        kb.cvt(xf, "f64"),
    ]
    dacc = kb.mov(0.0, "f64")
    for v in dvals:
        kb.add(dacc, v, out=dacc)
    kb.st("global", p, dacc, offset=32)
    ints = [
        kb.cvt(xf, "s32"),
        kb.cvt(xf, "s32", rnd="rmi"),
        kb.cvt(xd, "u32", sat=True),
        kb.mul(xs, xs, mode="hi"),
        kb.div(xs, 7),
        kb.shl(xs, 3),
        kb.shr(xs, 2),
        kb.xor(xs, 0x55),
        kb.or_(xs, 1),
        kb.not_(xs),
        kb.abs(xs),
    ]
    iacc = kb.mov(0, "s32")
    for v in ints:
        kb.add(iacc, kb.bitcast(v, "s32") if v.type != "s32" else v, out=iacc)
    wide = kb.mul(iacc, 3, mode="wide")
    kb.st("global", p, kb.mad(xs, xs, wide, mode="wide"), offset=40)
    kb.st("global", p, kb.cvt(iacc, "u8", sat=True, type_="s32"), offset=48, type_="u8")
    h = kb.mov(1.5, "f16")
    hh = kb.pack(h, h)
    lo, hi = kb.unpack(hh)
    kb.st("global", p, kb.bitcast(kb.pack(hi, lo), "b32"), offset=52)
    kb.atom("global", "cas", "u32", p, 5, compare=4, offset=56)
    kb.atom("shared", "add", "u32", kb.shared_addr(kb.shared("cnt", "u32", 4)), 1)
    kb.membar("gl")
    kb.fence("acq_rel", "gpu")
    label = kb.label("tail")
    kb.bra(label, pred=kb.setp("ne", xs, xs))
    kb.reqntid(128)
    kb.minnctapersm(2)
    kb.maxnreg(128)
    return kb


KERNELS = {
    "vadd": (vector_add, ("sm_80", "sm_86", "sm_90")),
    "reduction": (shared_reduction, ("sm_80", "sm_86", "sm_90")),
    "mma_tile": (mma_tile, ("sm_80", "sm_86", "sm_90")),
    "hopper": (hopper_skeleton, ("sm_90a",)),
    "math_precise": (lambda arch: math_features(arch, "precise"), ("sm_86", "sm_90")),
    "math_fast": (lambda arch: math_features(arch, "fast"), ("sm_86", "sm_90")),
}


@needs_ptxas
def test_every_representative_kernel_assembles_with_ptxas():
    jobs, names = [], []
    for name, (make, archs) in KERNELS.items():
        for arch in archs:
            jobs.append((make(arch).ptx(), arch))
            names.append(f"{name}@{arch}")
    reports = assemble_many(jobs)
    failures = [f"{n}: {r.message}" for n, r in zip(names, reports) if not r.ok]
    assert not failures, "\n".join(failures)
    by_name = dict(zip(names, reports))
    assert by_name["vadd@sm_86"].spills == 0 and by_name["vadd@sm_86"].registers > 0
    assert by_name["reduction@sm_86"].shared_bytes >= 32
    assert by_name["hopper@sm_90a"].shared_bytes >= 8


def test_vector_add_emits_expected_ptx():
    text = vector_add("sm_86").ptx()
    assert text.startswith(".version 7.1\n.target sm_86\n.address_size 64\n")
    for line in (
        "\t.param .u64 a,",
        "\t.param .u32 n",
        "ld.param.u64 %rd1, [a];",
        "cvta.to.global.u64 %rd2, %rd1;",
        "mov.u32 %r2, %ctaid.x;",
        "mov.u32 %r3, %ntid.x;",
        "mov.u32 %r4, %tid.x;",
        "mad.lo.u32 %r5, %r2, %r3, %r4;",
        "setp.lt.u32 %p1, %r5, %r1;",
        "@!%p1 bra $L_else_1;",
        "mul.wide.u32 %rd7, %r5, 4;",
        "add.u64 %rd8, %rd2, %rd7;",
        "ld.global.f32 %f1, [%rd8];",
        "add.rn.f32 %f3, %f1, %f2;",
        "st.global.f32 [%rd12], %f3;",
        "$L_else_1:",
        "\tret;",
    ):
        assert line in text, f"missing {line!r} in\n{text}"
    assert (
        ".reg .f32 %f<4>;" in text and ".reg .b64 %rd<13>;" in text and ".reg .pred %p<2>;" in text
    )
    assert "add.f32" in vector_add("sm_86", math="fast").ptx()  # fast mode may contract


def test_float_literals_are_exact_hex_of_the_operand_type():
    kb = KernelBuilder("lit", arch="sm_86")
    p = kb.param_ptr("p")
    x = kb.ld("global", "f64", p)
    y = kb.ld("global", "f32", p, offset=8)
    kb.st("global", p, kb.add(x, 0.1), offset=16)
    kb.st("global", p, kb.add(y, 0.1), offset=24)
    text = kb.ptx()
    d_hex = f"0d{struct.unpack('>Q', struct.pack('>d', 0.1))[0]:016X}"
    f_hex = f"0f{struct.unpack('>I', struct.pack('>f', 0.1))[0]:08X}"
    assert f"add.rn.f64 %fd2, %fd1, {d_hex};" in text
    assert f"add.rn.f32 %f2, %f1, {f_hex};" in text
    assert not re.search(r"\.f64 [^;]*0f[0-9A-F]{8}", text)


def test_exp_multiplies_by_log2e_before_ex2_and_precise_mode_uses_ieee_forms():
    kb = KernelBuilder("e", arch="sm_86")
    p = kb.param_ptr("p")
    x = kb.ld("global", "f32", p)
    kb.st("global", p, kb.exp(x))
    kb.st("global", p, kb.div(x, x), offset=4)
    kb.st("global", p, kb.sqrt(x), offset=8)
    kb.st("global", p, kb.rcp(x), offset=12)
    text = kb.ptx()
    log2e = f"0f{struct.unpack('>I', struct.pack('>f', 1.4426950408889634))[0]:08X}"
    assert f"mul.rn.f32 %f2, %f1, {log2e};" in text and "ex2.approx.f32 %f3, %f2;" in text
    assert "div.rn.f32" in text and "sqrt.rn.f32" in text and "rcp.rn.f32" in text
    fast = KernelBuilder("e", arch="sm_86", math="fast")
    q = fast.param_ptr("p")
    y = fast.ld("global", "f32", q)
    fast.st("global", q, fast.div(y, y))
    fast.st("global", q, fast.rcp(y))
    fast.st("global", q, fast.sqrt(y))
    ftext = fast.ptx()
    assert "div.full.f32" in ftext and "rcp.approx.ftz.f32" in ftext and "sqrt.approx.f32" in ftext


def test_register_banks_are_per_type_and_never_shadow_special_registers():
    text = math_features("sm_86", "precise").ptx()
    decls = dict(
        re.findall(r"\.reg \.(\w+) (%\w+)<\d+>;", text)[i][::-1] for i in range(text.count(".reg "))
    )
    assert decls["%f"] == "f32" and decls["%fd"] == "f64" and decls["%p"] == "pred"
    for name in re.findall(r"%[a-z]+\d+", text):
        assert not re.match(r"%(tid|ntid|ctaid|nctaid|laneid|warpid|clock)\d", name), name


def test_structure_labels_have_sigil_and_loop_is_runtime():
    kb = KernelBuilder("loopy", arch="sm_86")
    n = kb.param("n", "s32")
    acc = kb.mov(0, "s32")
    with kb.loop(0, n, 2) as i:
        kb.add(acc, i, out=acc)
    kb.st("global", kb.param_ptr("o"), acc)
    text = kb.ptx()
    assert (
        "setp.ge.s32 %p1, %r3, %r1;" in text
        and "$L_loop_1:" in text
        and "@%p2 bra $L_loop_1;" in text
    )
    assert all(lbl.startswith("$") for lbl in re.findall(r"^(\S+):$", text, re.MULTILINE))


def test_addr_uses_64_bit_arithmetic_past_4_gib():
    kb = KernelBuilder("big", arch="sm_86")
    base = kb.param_ptr("p")
    i = kb.param("i", "s32")
    j = kb.param("j", "u64")
    kb.st("global", kb.addr(base, i, 8), 0.0, type_="f64")
    kb.st("global", kb.addr(base, j, 8), 0.0, type_="f64")
    text = kb.ptx()
    assert "mul.wide.s32" in text and "mul.lo.u64" in text and "add.u64" in text
    assert "mul.lo.s32" not in text


# -- misuse ---------------------------------------------------------------------------------------
def test_type_mismatch_raises_at_generation_time():
    kb = KernelBuilder("bad", arch="sm_86")
    p = kb.param_ptr("p")
    f = kb.ld("global", "f32", p)
    d = kb.ld("global", "f64", p)
    u = kb.ld("global", "u32", p)
    with pytest.raises(TypeError, match=r"operand types differ"):
        kb.add(f, d)
    with pytest.raises(TypeError, match=r"\.u32"):
        kb.add(f, u, type_="f32")
    with pytest.raises(TypeError, match="f32 only"):
        kb.cos(d)
    with pytest.raises(TypeError, match="f32 only"):
        kb.ex2(d)
    with pytest.raises(TypeError, match="float"):
        kb.and_(f, f)
    with pytest.raises(TypeError, match="all operands are Python numbers"):
        kb.add(1, 2)


def test_unwritten_or_foreign_register_use_raises():
    kb = KernelBuilder("bad", arch="sm_86")
    r = kb.reg("f32")
    with pytest.raises(ValueError, match="read before anything was written"):
        kb.add(r, 1.0)
    other = KernelBuilder("other", arch="sm_86")
    with pytest.raises(ValueError, match="another KernelBuilder"):
        kb.add(other.tid(), 1)


def test_unbalanced_structure_raises_at_build():
    kb = KernelBuilder("bad", arch="sm_86")
    ctx = kb.if_(kb.setp("eq", kb.tid(), 0))
    ctx.__enter__()
    with pytest.raises(RuntimeError, match="unbalanced structure"):
        kb.build()
    kb2 = KernelBuilder("bad2", arch="sm_86")
    kb2.tid()
    with pytest.raises(RuntimeError, match="else_ must directly follow"), kb2.else_():
        pass
    with pytest.raises(ValueError, match="sigil"):
        kb2.bra("nowhere")


def test_shared_memory_limits_per_arch():
    kb = KernelBuilder("smem", arch="sm_86")
    kb.shared("a", "f32", 8192)  # 32 KB
    with pytest.raises(ValueError, match="49152"):
        kb.shared("b", "f32", 8192)  # 64 KB static
    with pytest.raises(ValueError, match="101376"):
        kb.dynamic_shared("dyn", 101376 - 32768 + 1)
    kb.dynamic_shared("dyn", 101376 - 32768)
    ok = KernelBuilder("smem90", arch="sm_90")
    ok.dynamic_shared("dyn", 232448)
    with pytest.raises(ValueError, match="166912"):
        KernelBuilder("smem80", arch="sm_80").dynamic_shared("dyn", 166913)


def test_instructions_above_the_arch_raise_naming_the_minimum():
    kb = KernelBuilder("old", arch="sm_75")
    with pytest.raises(NotImplementedError, match=r"cp\.async needs sm_80"):
        kb.cp_async(kb.shared("s", "f32", 4), kb.param_ptr("p"))
    with pytest.raises(NotImplementedError, match=r"redux\.sync needs sm_80"):
        kb.redux_sync("add", kb.tid())
    k90 = KernelBuilder("h", arch="sm_90")
    with pytest.raises(NotImplementedError, match=r"wgmma\.fence needs sm_90a"):
        k90.wgmma_fence()
    k86 = KernelBuilder("a", arch="sm_86")
    with pytest.raises(NotImplementedError, match="sm_90"):
        k86.mbarrier_arrive_expect_tx(k86.shared("bar", "b64", 1), 128)


def test_mma_shapes_that_do_not_exist_raise():
    kb = KernelBuilder("m", arch="sm_86")
    z = kb.mov(0.0, "f32")
    with pytest.raises(ValueError, match="does not exist"):
        kb.mma_sync("m16n8k16", "tf32", "tf32", "f32", [z] * 4, [z] * 2, [z] * 4)
    with pytest.raises(ValueError, match="does not exist"):
        kb.mma_sync("m8n8k4", "f64", "f64", "f32", [z], [z], [z] * 2)
    r = kb.bitcast(z, "b32")
    with pytest.raises(ValueError, match="needs 4"):
        kb.mma_sync("m16n8k16", "f16", "f16", "f32", [r] * 3, [r] * 2, [z] * 4)


def test_matrix_descriptor_bit_fields():
    bits = matrix_descriptor_bits(0x1230, 128, 1024, "128B")
    assert bits & 0x3FFF == 0x123
    assert (bits >> 16) & 0x3FFF == 8
    assert (bits >> 32) & 0x3FFF == 64
    assert bits >> 62 == 1
    with pytest.raises(ValueError, match="multiple of 16"):
        matrix_descriptor_bits(8, 0, 0)


def test_ptx_version_rises_with_the_instructions_used():
    assert vector_add("sm_90").ptx_version == "7.8"
    assert hopper_skeleton().ptx_version == "8.0"
    kb = KernelBuilder("v", arch="sm_90", ptx_version="7.8")
    kb.mbarrier_arrive_expect_tx(kb.shared("bar", "b64", 1), 64)
    with pytest.raises(ValueError, match="need PTX 8.0"):
        kb.ptx()


@pytest.mark.skipif(
    importlib.util.find_spec("oxicuda.ptx.parse") is None,
    reason="oxicuda.ptx.parse not written yet",
)
@pytest.mark.parametrize("name", sorted(KERNELS))
def test_emitted_ptx_parses_back_to_the_same_ir(name):
    from oxicuda.ptx.emit import emit
    from oxicuda.ptx.parse import parse

    make, archs = KERNELS[name]
    module = make(archs[-1]).module()
    text = emit(module)
    try:
        parsed = parse(text)
    except Exception as exc:
        if "{" in text and "[%rd" in text and name == "hopper":
            pytest.xfail(
                f"parser does not read tensor-map operands [tmap, {{c0, c1}}] (ir.Addr.index) yet: {exc}"
            )
        raise
    assert parsed == module


def test_ir_addr_with_tensor_coordinates_emits_bracketed_vector():
    from oxicuda.ptx.emit import emit_operand

    op = ir.Addr(ir.Reg("%rd1"), 0, ir.Vec((ir.Reg("%r1"), ir.Imm("0"))))
    assert emit_operand(op) == "[%rd1, {%r1, 0}]"


# -- builder kernels computed on the live backend (the emulator in CI) ------------------------------
def _load(kb: KernelBuilder):
    import oxicuda
    from oxicuda.driver import Module

    try:
        return Module(kb.ptx()).get_function(kb.name)
    except oxicuda.CudaError as exc:
        # only while the interpreter lacks these instructions; every other failure fails the test
        if oxicuda.get_backend() == "emulator" and "interpreter does not support" in str(exc):
            pytest.skip(f"emulator interpreter incomplete: {str(exc).splitlines()[1][:150]}")
        raise


def test_vector_add_kernel_computes_c_equals_a_plus_b(rng):
    import numpy as np

    import oxicuda

    n = 1000
    a, b = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    c = oxicuda.full(
        (n + 24,), np.nan, np.float32
    )  # poisoned, with a tail that must stay untouched
    fn = _load(vector_add("sm_86"))
    fn(((n + 127) // 128, 1, 1), (128, 1, 1), [oxicuda.asarray(a), oxicuda.asarray(b), c, n])
    got = oxicuda.asnumpy(c)
    np.testing.assert_array_equal(got[:n], a + b)
    assert np.isnan(got[n:]).all()


def test_shared_reduction_kernel_sums_every_element(rng):
    import numpy as np

    import oxicuda

    n = 1500
    x = rng.standard_normal(n).astype(np.float32)
    out = oxicuda.zeros((1,), np.float32)
    fn = _load(shared_reduction("sm_86"))
    fn(((n + 255) // 256, 1, 1), (256, 1, 1), [oxicuda.asarray(x), out, n])
    np.testing.assert_allclose(
        oxicuda.asnumpy(out)[0], x.astype(np.float64).sum(), rtol=1e-5, atol=1e-4
    )


def test_mma_tile_kernel_computes_twice_a_times_b_in_fragment_order(rng):
    import numpy as np

    import oxicuda
    from oxicuda.ptx import fragments

    a = rng.standard_normal((16, 16)).astype(np.float16)
    b = rng.standard_normal((16, 8)).astype(np.float16)
    c = oxicuda.full((128,), np.nan, np.float32)
    fn = _load(mma_tile("sm_86", extras=False))
    fn((1, 1, 1), (32, 1, 1), [oxicuda.asarray(a), oxicuda.asarray(b), c])
    ref = 2 * (a.astype(np.float64) @ b.astype(np.float64))
    table = fragments.MMA_SHAPES[("m16n8k16", "f16", "f32")].c.table
    expected = np.array([[ref[r, col] for (r, col) in lane] for lane in table])
    np.testing.assert_allclose(oxicuda.asnumpy(c).reshape(32, 4), expected, rtol=1e-3, atol=1e-3)
