"""One owner of device facts (oxicuda.driver.facts): the emulator's devices are the boards of
facts.BOARDS, every consumer reads the facts, and no device number is written elsewhere."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from oxicuda.blas import gemm_dispatch as gd
from oxicuda.driver.enums import DEVICE_ATTRIBUTES as DA
from oxicuda.driver.facts import BOARDS, arch_rates, board_facts, device_facts, shared_optin_limit
from oxicuda.emulator.api import EmulatorAPI
from oxicuda.emulator.devices import EMULATED_DEVICES

ROOT = Path(__file__).resolve().parent.parent / "oxicuda"


@pytest.mark.parametrize("arch,profile", [("sm_86", "rtx-a4000"), ("sm_80", "a100"), ("sm_90", "h200")])
def test_emulated_devices_report_their_boards_driver_values(arch, profile):
    board = BOARDS[profile]
    emu = EmulatorAPI(device=EMULATED_DEVICES[arch])
    get = lambda name: emu.device_get_attribute(DA[name], 0)
    assert emu.device_total_mem(0) == board.total_memory
    assert get("GLOBAL_MEMORY_BUS_WIDTH") == board.bus_width
    assert get("MAX_PERSISTING_L2_CACHE_SIZE") == board.persisting_l2_bytes
    assert get("ECC_ENABLED") == int(board.ecc)
    assert get("ASYNC_ENGINE_COUNT") == board.copy_engines
    assert get("MULTIPROCESSOR_COUNT") == board.sm_count
    assert get("MAX_SHARED_MEMORY_PER_MULTIPROCESSOR") == board.smem_per_sm
    assert get("MEMORY_CLOCK_RATE") == board.mem_clock_khz
    assert EMULATED_DEVICES[arch].cc == board.cc
    assert "emulator" in emu.device_get_name(0)


def test_emulated_sm90_is_the_h200_its_driver_reported():
    emu = EmulatorAPI(device=EMULATED_DEVICES["sm_90"])
    get = lambda name: emu.device_get_attribute(DA[name], 0)
    assert emu.device_total_mem(0) == 150109880320
    assert get("GLOBAL_MEMORY_BUS_WIDTH") == 6016
    assert get("MAX_PERSISTING_L2_CACHE_SIZE") == 39321600
    assert get("ECC_ENABLED") == 1
    assert get("ASYNC_ENGINE_COUNT") == 3


def test_live_facts_match_the_boards_facts_of_the_emulated_board():
    live = device_facts()
    board = next(b for b in BOARDS.values() if b.cc == live.cc)
    expect = board_facts(board, ordinal=live.ordinal)
    assert dataclasses.replace(live, name=expect.name) == expect


def test_a100_memory_rate_is_its_datasheet_bandwidth_over_its_clock():
    a100 = board_facts("a100")
    assert a100.memory_bytes_per_clock == 1103
    assert abs(a100.peak_memory_bytes_per_s - 1555e9) / 1555e9 < 0.01


def test_split_k_model_prices_partials_with_the_devices_memory_rate():
    p = gd.GemmProblem(128, 128, 65536, "float32")
    h200 = board_facts("h200")
    cfg = gd.TILES["float32"]["split_k"][0]
    slow = dataclasses.replace(h200, rates=dataclasses.replace(h200.rates, memory_bytes_per_clock=1))
    assert gd.split_k_clocks(p, slow, cfg, 8) > gd.split_k_clocks(p, h200, cfg, 8) + 1e6
    fewer = dataclasses.replace(h200, rates=dataclasses.replace(h200.rates, fp32_lanes=64))
    assert gd.modelled_clocks(cfg, 132, 64, fewer) > 1.5 * gd.modelled_clocks(cfg, 132, 64, h200)


def test_shared_optin_limits_follow_the_boards():
    for board in BOARDS.values():
        assert shared_optin_limit(board.cc) == board.smem_per_block_optin
    assert shared_optin_limit((8, 7)) == 166912 and shared_optin_limit((9, 5)) == 232448
    with pytest.raises(KeyError):
        shared_optin_limit((6, 0))
    assert arch_rates((9, 0)).fp32_lanes == 128


#: device numbers that must come from oxicuda.driver.facts (SM counts, shared memory per SM and
#: per block of the H200/A100/A4000, threads per SM in sm_count/threads assignments)
_LITERALS = re.compile(r"\b(232448|233472|166912|167936|101376|102400)\b|sm_count\s*=\s*\d|"
                       r"sm_count: int = \d|max_threads_per_sm\s*=\s*\d")


def test_no_device_numbers_outside_the_facts_module():
    found = []
    for path in ROOT.rglob("*.py"):
        if path.name in ("facts.py", "boards.py") and path.parent.name == "driver":
            continue  # the owner of device facts and its table
        for i, line in enumerate(path.read_text().splitlines(), 1):
            code = line.split("#", 1)[0]
            if _LITERALS.search(code) and '"""' not in line and not code.strip().startswith(("``", "(")):
                found.append(f"{path.relative_to(ROOT)}:{i}: {line.strip()}")
    assert not found, "device numbers outside driver/facts.py and its table driver/boards.py:\n" + "\n".join(found)
