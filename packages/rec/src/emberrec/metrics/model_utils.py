"""Pull each task's labels, predictions and weights out of a model's output dict."""

from __future__ import annotations

from ember import Tensor
from emberrec.metrics.metrics_config import RecTaskInfo


def is_empty_signals(labels: Tensor, predictions: Tensor, weights: Tensor) -> bool:
    return labels.numel() <= 0 and predictions.numel() <= 0 and weights.numel() <= 0


def _get(model_out: dict[str, Tensor], key: str, task: str, field: str) -> Tensor:
    if key not in model_out:
        raise KeyError(f"model_out has no {field} {key!r} for task {task!r}; its keys are {sorted(model_out)}")
    value = model_out[key]
    if not isinstance(value, Tensor):
        raise TypeError(f"model_out[{key!r}] ({field} of task {task!r}) must be a Tensor, got {type(value).__name__}")
    return value.squeeze()


def parse_model_outputs(
    label_name: str, prediction_name: str, weight_name: str, model_out: dict[str, Tensor], task: str = ""
) -> tuple[Tensor, Tensor, Tensor]:
    labels = _get(model_out, label_name, task, "label")
    predictions = _get(model_out, prediction_name, task, "prediction")
    weights = _get(model_out, weight_name, task, "weight")
    if not is_empty_signals(labels, predictions, weights):
        if not labels.numel() == predictions.numel() == weights.numel():
            raise ValueError(
                f"task {task!r}: expected the same number of elements in labels, predictions and weights, got "
                f"{labels.numel()}, {predictions.numel()} and {weights.numel()}"
            )
        if labels.dim() == 0:  # a batch of one squeezes to a scalar
            labels, predictions, weights = labels.reshape(1), predictions.reshape(1), weights.reshape(1)
    return labels, predictions, weights


def parse_task_model_outputs(
    tasks: list[RecTaskInfo], model_out: dict[str, Tensor], required_inputs_list: list[str] | None = None
) -> tuple[dict[str, Tensor], dict[str, Tensor], dict[str, Tensor], dict[str, Tensor]]:
    """``(labels, predictions, weights, required_inputs)``, each keyed by task name; a task with no
    examples in this batch is left out, so metrics skip it."""
    all_labels: dict[str, Tensor] = {}
    all_predictions: dict[str, Tensor] = {}
    all_weights: dict[str, Tensor] = {}
    for task in tasks:
        labels, predictions, weights = parse_model_outputs(
            task.label_name, task.prediction_name, task.weight_name, model_out, task.name
        )
        if not is_empty_signals(labels, predictions, weights):
            all_labels[task.name] = labels
            all_predictions[task.name] = predictions
            all_weights[task.name] = weights
    required = {name: _get(model_out, name, "", "required input") for name in required_inputs_list or []}
    return all_labels, all_predictions, all_weights, required
