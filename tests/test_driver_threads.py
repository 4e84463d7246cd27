"""Launches of one Function from several threads: each launch carries its own arguments."""

from __future__ import annotations

import threading

import numpy as np

import oxicuda
from oxicuda.driver import Module
from oxicuda.ptx.builder import KernelBuilder
from oxicuda.ptx.target import device_arch


def test_launches_from_several_threads_never_mix_their_arguments():
    kb = KernelBuilder("fill_u32_threads", arch=device_arch())
    p, v, n = kb.param_ptr("p"), kb.param("v", "u32"), kb.param("n", "u32")
    i = kb.tid()
    with kb.if_(kb.setp("lt", i, n)):
        kb.st("global", kb.addr(p, i, 4), v)
    fn = Module(kb.ptx()).get_function("fill_u32_threads")
    arrays = [oxicuda.full(32, 0xFFFFFFFF, np.uint32) for _ in range(6)]

    def work(k: int) -> None:
        for _ in range(25):
            fn(1, 32, (arrays[k], np.uint32(k + 1), np.uint32(32)))

    threads = [threading.Thread(target=work, args=(k,)) for k in range(len(arrays))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    oxicuda.driver.api().ctx_synchronize()
    for k, a in enumerate(arrays):
        np.testing.assert_array_equal(a.get(), np.full(32, k + 1, np.uint32))
