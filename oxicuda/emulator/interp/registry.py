"""The opcode -> decoder table that every instruction handler registers into."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

#: Op kinds the run loop treats specially; everything else is PLAIN (execute, then next pc).
PLAIN, BRANCH, EXIT, BARRIER = 0, 1, 2, 3


@dataclass
class Op:
    """A decoded instruction.

    ``bind(cta) -> step(mask)`` for PLAIN ops; BRANCH ops carry ``target`` (an instruction
    index, filled by the loader from ``label``); BARRIER ops may bind a step too (it runs when
    the barrier releases, with the mask of the released threads).
    """

    bind: Callable[[Any], Callable[[Any], None]] | None
    kind: int = PLAIN
    label: str = ""
    target: int = -1
    uniform: bool = False
    #: BARRIER ops other than the whole-CTA ``bar.sync 0``: (id operand, count operand or None,
    #: is_arrive); see ``named_barriers``
    barrier: Any = None


Decoder = Callable[[Any, Any], Op]
_HANDLERS: dict[str, Decoder] = {}


def register_handler(opcode: str, decoder: Decoder, *, replace: bool = False) -> None:
    """Make ``decoder(instr, kernel_context) -> Op`` the handler of ``opcode`` (e.g. "mma")."""
    if opcode in _HANDLERS and not replace and _HANDLERS[opcode] is not decoder:
        raise ValueError(f"opcode {opcode!r} already has a handler ({_HANDLERS[opcode].__module__}); "
                         "pass replace=True to override it")
    _HANDLERS[opcode] = decoder


def handler_for(opcode: str) -> Decoder | None:
    """The decoder registered for ``opcode``, or None."""
    return _HANDLERS.get(opcode)
