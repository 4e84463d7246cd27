"""A stand-in for libcuda's launch calls, compiled with the machine's C compiler, so that the real
cffi binding (``LibCudaAPI``'s launch plan and ``launch_kernel``) runs on a machine without a GPU.

``cuLaunchKernel`` and ``cuLaunchKernelEx`` record what they were given (function, geometry,
shared bytes, stream, the ``kernelParams`` array) and return ``stub_result``; nothing else of
the driver exists, so only the launch surface of ``LibCudaAPI`` may be used with it. Tests and
``benches/launch_host_cost.py`` load it through ``OXICUDA_LIBCUDA``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile

STUB_SOURCE = r"""
#include <stdint.h>
typedef struct {
    unsigned int gx, gy, gz, bx, by, bz, smem; uintptr_t stream; void *attrs; unsigned int nattrs;
} launch_config;

unsigned long long stub_calls = 0;
int stub_result = 0;
unsigned int stub_geometry[7];  /* grid x y z, block x y z, shared bytes */
uintptr_t stub_function, stub_stream;
void **stub_params;
void *stub_attrs;
unsigned int stub_num_attrs;
int stub_used_ex;
/* the first stub_log_bytes bytes behind kernelParams[0] of each launch, in launch order (the
   launch path keeps a function's parameters contiguous from the first one) */
unsigned int stub_log_bytes = 0;
unsigned int stub_log_count = 0;
unsigned char stub_log[16][256];

static void stub_record_params(void **params) {
    unsigned int i, n = stub_log_bytes < 256 ? stub_log_bytes : 256;
    if (stub_log_count < 16 && params) {
        for (i = 0; i < n; i++) stub_log[stub_log_count][i] = ((unsigned char *)params[0])[i];
        stub_log_count++;
    }
}

int cuLaunchKernel(uintptr_t f, unsigned int gx, unsigned int gy, unsigned int gz,
                   unsigned int bx, unsigned int by, unsigned int bz, unsigned int smem,
                   uintptr_t stream, void **params, void **extra) {
    stub_calls++; stub_used_ex = 0; stub_function = f;
    stub_geometry[0] = gx; stub_geometry[1] = gy; stub_geometry[2] = gz;
    stub_geometry[3] = bx; stub_geometry[4] = by; stub_geometry[5] = bz; stub_geometry[6] = smem;
    stub_stream = stream; stub_params = params; stub_attrs = 0; stub_num_attrs = 0;
    stub_record_params(params);
    return stub_result;
}

int cuLaunchKernelEx(const launch_config *c, void *f, void **params, void **extra) {
    stub_calls++; stub_used_ex = 1; stub_function = (uintptr_t)f;
    stub_geometry[0] = c->gx; stub_geometry[1] = c->gy; stub_geometry[2] = c->gz;
    stub_geometry[3] = c->bx; stub_geometry[4] = c->by; stub_geometry[5] = c->bz;
    stub_geometry[6] = c->smem;
    stub_stream = c->stream; stub_params = params; stub_attrs = c->attrs;
    stub_num_attrs = c->nattrs;
    stub_record_params(params);
    return stub_result;
}

int cuGetErrorName(int error, const char **text) { return 1; }
int cuGetErrorString(int error, const char **text) { return 1; }
"""

STUB_CDEF = """
extern unsigned long long stub_calls;
extern int stub_result;
extern unsigned int stub_geometry[7];
extern uintptr_t stub_function, stub_stream;
extern void **stub_params;
extern void *stub_attrs;
extern unsigned int stub_num_attrs;
extern int stub_used_ex;
extern unsigned int stub_log_bytes, stub_log_count;
extern unsigned char stub_log[16][256];
"""


def compiler() -> str | None:
    """The C compiler used to build the stub, or None when the machine has none."""
    for name in (os.environ.get("CC", ""), "cc", "gcc", "clang"):
        if name and shutil.which(name):
            return shutil.which(name)
    return None


def build(directory: str | None = None) -> str:
    """Compile the stub into ``directory`` (a new temporary one if None); its path.

    Raises RuntimeError when there is no C compiler or the build fails.
    """
    cc = compiler()
    if cc is None:
        raise RuntimeError("no C compiler (cc, gcc, clang or $CC) to build the libcuda stub")
    directory = directory or tempfile.mkdtemp(prefix="oxicuda-libcuda-stub-")
    source = os.path.join(directory, "libcuda_stub.c")
    target = os.path.join(directory, "libcuda_stub.so")
    with open(source, "w") as f:
        f.write(STUB_SOURCE)
    done = subprocess.run([cc, "-O2", "-shared", "-fPIC", "-o", target, source],
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"building the libcuda stub failed:\n{done.stderr}")
    return target


class StubDriver:
    """``LibCudaAPI`` over the stub (``api``) and the stub's recorded state (``state``)."""

    def __init__(self, path: str) -> None:
        import cffi

        from oxicuda.driver.libcuda import LibCudaAPI

        self.path = path
        old = os.environ.get("OXICUDA_LIBCUDA")
        os.environ["OXICUDA_LIBCUDA"] = path
        try:
            self.api = LibCudaAPI()
        finally:
            if old is None:
                del os.environ["OXICUDA_LIBCUDA"]
            else:
                os.environ["OXICUDA_LIBCUDA"] = old
        self._ffi = cffi.FFI()
        self._ffi.cdef(STUB_CDEF)
        self.state = self._ffi.dlopen(path)

    def last_geometry(self) -> tuple[tuple[int, int, int], tuple[int, int, int], int]:
        g = [self.state.stub_geometry[i] for i in range(7)]
        return (g[0], g[1], g[2]), (g[3], g[4], g[5]), g[6]

    def start_log(self, nbytes: int) -> None:
        """Log the first ``nbytes`` parameter bytes of each of the next 16 launches."""
        self.state.stub_log_bytes = nbytes
        self.state.stub_log_count = 0

    def logged_params(self) -> list[bytes]:
        n = self.state.stub_log_bytes
        return [bytes(self._ffi.buffer(self.state.stub_log[i], n))
                for i in range(self.state.stub_log_count)]

    def last_param_bytes(self, layout) -> bytes:
        """The bytes the last launch's ``kernelParams`` point at, laid out as ``layout``."""
        out = bytearray(layout.total_size)
        params = self.state.stub_params
        for i, slot in enumerate(layout.slots):
            out[slot.offset:slot.offset + slot.size] = self._ffi.buffer(params[i], slot.size)[:]
        return bytes(out)
