"""Device profiles (OXICUDA_DEVICE_PROFILE): dispatch and code generation see the profiled
board's facts, the kernels run on the device present. Each case runs in a fresh process, since
the profile is read with the device's facts."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from oxicuda.driver import facts

_SCRIPT = r"""
import json, sys
import numpy as np, ml_dtypes, oxicuda, oxicuda.blas as blas, oxicuda.dnn as dnn
from oxicuda.driver.facts import device_facts, native_device_facts, active_profile
rng = np.random.default_rng(int(sys.argv[1]))
n = int(sys.argv[2])
a = rng.standard_normal((n, n)).astype(ml_dtypes.bfloat16)
b = rng.standard_normal((n, n)).astype(ml_dtypes.bfloat16)
x = rng.standard_normal((2, 4, 8, 8)).astype(np.float32)
w = rng.standard_normal((8, 4, 3, 3)).astype(np.float32)
q = rng.standard_normal((1, 2, 64, 64)).astype(np.float16)
with oxicuda.trace() as t:
    c = blas.gemm(oxicuda.asarray(a), oxicuda.asarray(b))
    s = dnn.softmax(oxicuda.asarray(x.reshape(8, 64)))
    y = dnn.conv2d(oxicuda.asarray(x), oxicuda.asarray(w), padding=1)
    o = dnn.attention(oxicuda.asarray(q), oxicuda.asarray(q), oxicuda.asarray(q))
ref = a.astype(np.float64) @ b.astype(np.float64)
f = device_facts()
print(json.dumps({
    "profile": active_profile(), "arch": f.arch, "sm_count": f.sm_count, "native_arch": native_device_facts().arch,
    "launched": sorted({(r.spec.family, r.spec.arch) for r in t.launches}),
    "gemm_err": float(np.abs(c.get().astype(np.float64) - ref).max() / np.abs(ref).max()),
    "softmax_ok": bool(np.allclose(s.get().sum(axis=1), 1.0, atol=1e-5)),
    "conv_finite": bool(np.isfinite(y.get()).all()), "attention_finite": bool(np.isfinite(o.get().astype(np.float32)).all()),
}))
"""


def _run(env_extra: dict, n: int = 64) -> dict:
    env = dict(os.environ, **env_extra)
    done = subprocess.run([sys.executable, "-c", _SCRIPT, "7", str(n)], env=env, capture_output=True,
                          text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def _check_a4000(out: dict, native_arch: str) -> None:
    assert out["profile"] == "rtx-a4000" and out["arch"] == "sm_86" and out["sm_count"] == 48
    assert out["native_arch"] == native_arch
    families = {fam for fam, _ in out["launched"]}
    assert {arch for _, arch in out["launched"]} == {"sm_86"}, out["launched"]  # no sm_90/sm_90a code
    assert not any("wgmma" in fam for fam in families), families
    assert "gemm_tensor_core" in families  # bf16 on mma.sync, the A4000's tensor-core path
    assert out["gemm_err"] < 1e-2 and out["softmax_ok"] and out["conv_finite"] and out["attention_finite"]


@pytest.mark.slow
def test_a4000_profile_on_an_emulated_h200_generates_sm86_code_only():
    if os.environ.get("OXICUDA_BACKEND", "") == "cuda":
        pytest.skip("the emulator case; the GPU case is below")
    native = _run({"OXICUDA_BACKEND": "emulator", "OXICUDA_EMULATOR_ARCH": "sm_90"})
    assert native["profile"] == "native" and native["arch"] == "sm_90"
    assert any("wgmma" in fam for fam, _ in native["launched"])  # the same calls natively take wgmma
    out = _run({"OXICUDA_BACKEND": "emulator", "OXICUDA_EMULATOR_ARCH": "sm_90",
                "OXICUDA_DEVICE_PROFILE": "rtx-a4000"})
    _check_a4000(out, "sm_90")


@pytest.mark.gpu
def test_a4000_profile_on_the_gpu_runs_sm86_kernels_at_a_real_size():
    from oxicuda.driver.facts import native_device_facts

    if native_device_facts().cc < (8, 6):
        pytest.skip("the A4000 profile needs an sm_86 or newer GPU")
    out = _run({"OXICUDA_DEVICE_PROFILE": "rtx-a4000"}, n=1024)
    _check_a4000(out, native_device_facts().arch)


def test_profile_facts_are_the_board_row_and_bad_profiles_raise(monkeypatch):
    row = facts.BOARDS["rtx-a4000"]
    monkeypatch.setenv(facts.PROFILE_ENV, "rtx-a4000")
    native = facts.board_facts("h200")
    seen = facts._profiled(native)
    assert (seen.cc, seen.sm_count, seen.smem_per_block_optin, seen.l2_bytes) == \
        (row.cc, row.sm_count, row.smem_per_block_optin, row.l2_bytes)
    assert "profile on NVIDIA H200" in seen.name
    monkeypatch.setenv(facts.PROFILE_ENV, "native")
    assert facts._profiled(native) is native
    monkeypatch.setenv(facts.PROFILE_ENV, "h200")
    with pytest.raises(facts.DeviceProfileError, match="cannot run on this sm_86"):
        facts._profiled(facts.board_facts("rtx-a4000"))
    monkeypatch.setenv(facts.PROFILE_ENV, "a100")  # sm_80 code could run on an sm_86 board, but
    with pytest.raises(facts.DeviceProfileError, match="allows more than"):  # its shared memory not
        facts._profiled(facts.board_facts("rtx-a4000"))
    monkeypatch.setenv(facts.PROFILE_ENV, "gtx-480")
    with pytest.raises(facts.DeviceProfileError, match="known profiles"):
        facts.active_profile()


def test_info_and_bench_name_the_profile():
    env = dict(os.environ, OXICUDA_DEVICE_PROFILE="rtx-a4000")
    if env.get("OXICUDA_BACKEND") != "cuda":
        env.update(OXICUDA_BACKEND="emulator", OXICUDA_EMULATOR_ARCH="sm_90")
    info = subprocess.run([sys.executable, "-m", "oxicuda", "info"], env=env, capture_output=True, text=True, check=False,
                          timeout=120)
    assert info.returncode == 0 and "device profile: rtx-a4000" in info.stdout
    assert "as profiled: NVIDIA RTX A4000" in info.stdout
    bad = subprocess.run([sys.executable, "-m", "oxicuda", "bench", "--profile", "nosuch", "memory"], env=env,
                         capture_output=True, text=True, timeout=120, check=False)
    assert bad.returncode == 2 and "known profiles" in bad.stderr
