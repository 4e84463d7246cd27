"""Run one PTX kernel on an ``EmulatorAPI`` (or any ``DriverAPI``) with numpy arguments.

For tests and tools that want the driver calls without ``oxicuda.driver.Module``: numpy arrays
are copied to fresh device allocations, the kernel runs, and the arrays are copied back.
"""

from __future__ import annotations

import struct

import numpy as np

from ...driver.params import entry_layouts

_CODES = {".u64": "Q", ".s64": "q", ".b64": "Q", ".u32": "I", ".s32": "i", ".b32": "I",
          ".f32": "f", ".f64": "d", ".u16": "H", ".s16": "h", ".b16": "H", ".u8": "B",
          ".s8": "b", ".b8": "B"}


def run_ptx(api, ptx: str, name: str, grid, block, args, shared_mem: int = 0) -> list:
    """Launch ``name`` from ``ptx`` with ``args`` (numpy arrays -> device pointers, other values
    packed by the parameter's PTX type); return the arrays' contents after the launch (others
    as given). Device memory is freed afterwards, also when the launch raises."""
    layout = entry_layouts(ptx)[name]
    if len(layout.slots) != len(args):
        raise ValueError(f"{name} takes {len(layout.slots)} parameters; got {len(args)} arguments")
    mod = api.module_load_data(ptx.encode())
    ptrs: list[int] = []
    try:
        fn = api.module_get_function(mod, name)
        pbuf = api.param_buffer(layout)
        for slot, a in zip(layout.slots, args):
            if isinstance(a, np.ndarray):
                a = np.ascontiguousarray(a)
                p = api.mem_alloc(max(a.nbytes, 1))
                ptrs.append(p)
                if a.nbytes:
                    api.memcpy_htod(p, a.ctypes.data, a.nbytes)
                struct.pack_into("<Q", pbuf.data, slot.offset, p)
            elif isinstance(a, (bytes, bytearray)):
                pbuf.data[slot.offset: slot.offset + len(a)] = a
            else:
                code = _CODES[slot.ptx_type]
                val = float(a) if code in "fd" else int(a)
                if code in "QIHB" and val < 0:
                    val &= (1 << (8 * slot.size)) - 1
                struct.pack_into("<" + code, pbuf.data, slot.offset, val)
        api.launch_kernel(fn, tuple(grid), tuple(block), shared_mem, 0, pbuf)
        out = []
        k = 0
        for a in args:
            if isinstance(a, np.ndarray):
                res = np.empty_like(np.ascontiguousarray(a))
                if res.nbytes:
                    api.memcpy_dtoh(res.ctypes.data, ptrs[k], res.nbytes)
                k += 1
                out.append(res)
            else:
                out.append(a)
        return out
    finally:
        for p in ptrs:
            api.mem_free(p)
        api.module_unload(mod)
