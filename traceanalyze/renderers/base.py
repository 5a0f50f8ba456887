"""What every renderer is, for the report, the gate's verdict and the diff alike: a function of the
model and of `RenderOptions` (how to print, apart from what) that returns the text. Each command's
format table (`renderers.formats.RENDERERS`, `gate.formats.RENDERERS`, `diff.formats.RENDERERS`)
maps `--format` names to such functions, and the CLI calls every one of them the same way."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, TypeVar

Model = TypeVar("Model", contravariant=True)


@dataclass(frozen=True)
class RenderOptions:
    """How to render: `width`, the columns text formats fit (None: COLUMNS, else the terminal's,
    else 80; read by the terminal formats only), and `top`, how many kernels a diff lists side by
    side (read by the diff's formats only)."""

    width: int | None = None
    top: int = 10


DEFAULT_OPTIONS = RenderOptions()
# formats whose renderers escape their own strings (JSON): the CLI prints them as they are, every
# other format through `escape.output_text`
SELF_ESCAPED = frozenset({"json"})


class Renderer(Protocol[Model]):
    """`render(model, options)`: the model (a `Report`, a gate `Verdict`, a `Diff`) as text."""

    def __call__(self, model: Model, options: RenderOptions = DEFAULT_OPTIONS, /) -> str: ...
