"""RecMetrics: NE, CTR, Calibration, AUC, MSE/RMSE, Accuracy and Throughput over lifetime and
window, grouped and checkpointed by ``RecMetricModule`` (TorchRec's ``torchrec.metrics``)."""

from emberrec.metrics.accuracy import AccuracyMetric
from emberrec.metrics.auc import AUCMetric
from emberrec.metrics.calibration import CalibrationMetric
from emberrec.metrics.ctr import CTRMetric
from emberrec.metrics.metric_module import (
    RecMetricModule,
    StateMetric,
    generate_metric_module,
)
from emberrec.metrics.metrics_config import (
    DefaultMetricsConfig,
    DefaultTaskInfo,
    EmptyMetricsConfig,
    MetricsConfig,
    RecComputeMode,
    RecMetricDef,
    RecMetricEnum,
    RecTaskInfo,
    StateMetricEnum,
    ThroughputDef,
)
from emberrec.metrics.mse import MSEMetric
from emberrec.metrics.ne import NEMetric
from emberrec.metrics.rec_metric import (
    RecMetric,
    RecMetricComputation,
    RecMetricException,
    RecMetricList,
    reduce_states,
)
from emberrec.metrics.throughput import ThroughputMetric

__all__ = [
    "AUCMetric",
    "AccuracyMetric",
    "CTRMetric",
    "CalibrationMetric",
    "DefaultMetricsConfig",
    "DefaultTaskInfo",
    "EmptyMetricsConfig",
    "MSEMetric",
    "MetricsConfig",
    "NEMetric",
    "RecComputeMode",
    "RecMetric",
    "RecMetricComputation",
    "RecMetricDef",
    "RecMetricEnum",
    "RecMetricException",
    "RecMetricList",
    "RecMetricModule",
    "RecTaskInfo",
    "StateMetric",
    "StateMetricEnum",
    "ThroughputDef",
    "ThroughputMetric",
    "generate_metric_module",
    "reduce_states",
]
