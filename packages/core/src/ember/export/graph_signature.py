"""What each input and output of an exported graph is (torch.export.graph_signature)."""

from __future__ import annotations

import dataclasses
from enum import Enum, auto
from typing import Any

__all__ = ["ConstantArgument", "ExportGraphSignature", "InputKind", "InputSpec", "OutputKind", "OutputSpec",
           "TensorArgument"]


class InputKind(Enum):
    USER_INPUT = auto()
    PARAMETER = auto()
    BUFFER = auto()
    CONSTANT_TENSOR = auto()
    CUSTOM_OBJ = auto()
    TOKEN = auto()


class OutputKind(Enum):
    USER_OUTPUT = auto()
    LOSS_OUTPUT = auto()
    BUFFER_MUTATION = auto()
    GRADIENT_TO_PARAMETER = auto()
    GRADIENT_TO_USER_INPUT = auto()
    USER_INPUT_MUTATION = auto()
    TOKEN = auto()


@dataclasses.dataclass
class TensorArgument:
    """A graph input or output that is a tensor: the placeholder's (or output value's) name."""

    name: str


@dataclasses.dataclass
class ConstantArgument:
    """A graph input or output fixed at export time to ``value``."""

    name: str
    value: Any


@dataclasses.dataclass
class InputSpec:
    kind: InputKind
    arg: TensorArgument | ConstantArgument
    target: str | None
    persistent: bool | None = None

    def __str__(self) -> str:
        target = "" if self.target is None else f" target={self.target!r}"
        persistent = "" if self.persistent is None else f" persistent={self.persistent}"
        return f"{self.arg.name}: {self.kind.name}{target}{persistent}"


@dataclasses.dataclass
class OutputSpec:
    kind: OutputKind
    arg: TensorArgument | ConstantArgument
    target: str | None

    def __str__(self) -> str:
        target = "" if self.target is None else f" target={self.target!r}"
        return f"{self.arg.name}: {self.kind.name}{target}"


@dataclasses.dataclass
class ExportGraphSignature:
    """The inputs of an exported graph in order (parameters, buffers, lifted constants, then the
    user's inputs) and its outputs, with the module attribute each stands for; the name lists are
    tuples, as PyTorch 2.13 gives them."""

    input_specs: list[InputSpec]
    output_specs: list[OutputSpec]

    def _inputs(self, kind: InputKind) -> list[InputSpec]:
        return [s for s in self.input_specs if s.kind is kind]

    @property
    def parameters(self) -> tuple[str, ...]:
        return tuple(s.target for s in self._inputs(InputKind.PARAMETER))

    @property
    def buffers(self) -> tuple[str, ...]:
        return tuple(s.target for s in self._inputs(InputKind.BUFFER))

    @property
    def non_persistent_buffers(self) -> tuple[str, ...]:
        return tuple(s.target for s in self._inputs(InputKind.BUFFER) if s.persistent is False)

    @property
    def lifted_tensor_constants(self) -> tuple[str, ...]:
        return tuple(s.target for s in self._inputs(InputKind.CONSTANT_TENSOR))

    @property
    def user_inputs(self) -> tuple[str | Any, ...]:
        return tuple(s.arg.name if isinstance(s.arg, TensorArgument) else s.arg.value
                     for s in self._inputs(InputKind.USER_INPUT))

    @property
    def user_outputs(self) -> tuple[str | Any, ...]:
        return tuple(s.arg.name if isinstance(s.arg, TensorArgument) else s.arg.value
                     for s in self.output_specs if s.kind is OutputKind.USER_OUTPUT)

    @property
    def inputs_to_parameters(self) -> dict[str, str]:
        return {s.arg.name: s.target for s in self._inputs(InputKind.PARAMETER)}

    @property
    def inputs_to_buffers(self) -> dict[str, str]:
        return {s.arg.name: s.target for s in self._inputs(InputKind.BUFFER)}

    @property
    def inputs_to_lifted_tensor_constants(self) -> dict[str, str]:
        return {s.arg.name: s.target for s in self._inputs(InputKind.CONSTANT_TENSOR)}

    @property
    def buffers_to_mutate(self) -> dict[str, str]:
        # in-place writes to buffers stay in the graph (as PyTorch 2.13's training IR keeps them)
        return {s.arg.name: s.target for s in self.output_specs if s.kind is OutputKind.BUFFER_MUTATION}

    def __str__(self) -> str:
        lines = ["# inputs", *map(str, self.input_specs), "", "# outputs", *map(str, self.output_specs)]
        return "\n".join(lines)
