"""The artifacts of the throughput and scaling tools: format ids, file names and columns, defined once.

None of them is part of a result folder (docs/result-format.md); each is a JSON object whose
``format`` says what it is. The harness writes them (trainmark.harness.throughput.sweep,
sweep_output and ops; trainmark.harness.scale.saturation and worker) and reads back the ones it
takes as input (``trainmark run --ceilings`` an ops result, ``trainmark scale --link-from`` an
all-reduce result, ``trainmark scale`` its workers' points); ``trainmark report --sweep``
(trainmark.report.sweeps) reads a sweep result. Both sides take the names from here.
"""
from __future__ import annotations

# ---------------------------------------------------------------- trainmark sweep
SWEEP_FORMAT = "trainmark-sweep/1"
SWEEP_CSV = "sweep.csv"
SWEEP_JSON = "sweep.json"
SWEEP_THROUGHPUT_PNG = "throughput.png"   # samples/s against the batch size, one line per precision
SWEEP_ENERGY_PNG = "energy.png"           # J/sample against the batch size (when any energy was measured)
# Every point of ``points`` has exactly these keys (CSV columns, in order).
SWEEP_POINT_FIELDS = [
    "benchmark", "device", "device_name", "data", "precision", "precision_used", "batch_size", "in_grid",
    "status", "error", "warmup_steps", "steps", "seconds", "samples", "samples_per_s", "step_ms",
    "flops_per_step", "tflops", "peak_dtype", "peak_tflops", "peak_kind", "utilization",
    "ceiling_tflops", "utilization_of_ceiling", "energy_j", "j_per_sample", "energy_method",
    "energy_reason", "peak_memory_bytes", "peak_memory_method", "loss_finite",
]

# ---------------------------------------------------------------- trainmark ops
OPS_FORMAT = "trainmark-ops/1"

# ---------------------------------------------------------------- trainmark scale
SCALE_FORMAT = "trainmark-scale/1"
SCALE_CSV = "scale.csv"
SCALE_JSON = "scale.json"
SCALE_PLOT = "scale.png"
# Every point of ``points`` has these keys (CSV columns, in order).
SCALE_POINT_FIELDS = ["world_size", "nnodes", "nproc_per_node", "status", "global_batch", "local_batch",
                      "samples_per_s", "step_s", "compute_s", "comm_s", "exposed_comm_s", "efficiency",
                      "predicted_samples_per_s", "prediction_error", "step_spread", "suspect", "error"]

# One world size's figures, written by the worker's local rank 0 and read by trainmark scale
SCALE_POINT_FORMAT = "trainmark-scale-point/1"
# The worker's figures a scale point takes over (the rest stays in the point's raw record)
SCALE_POINT_MEASURED = ("global_batch", "local_batch", "samples_per_s", "step_s", "compute_s", "comm_s",
                        "exposed_comm_s", "step_spread")
# ``trainmark scale validate --json``: one record per MLPerf pair, and the medians by size bucket
SCALE_VALIDATION_FORMAT = "trainmark-scale-validation/1"
SCALE_VALIDATION_RECORD_FIELDS = ("benchmark", "submitter", "accelerator", "n_small", "n_large", "actual_minutes",
                                  "projected_minutes", "error")


def scale_point_file(world_size: int) -> str:
    """The worker's result file of one world size (in a temporary folder of trainmark scale)."""
    return f"point-{world_size}.json"


# ---------------------------------------------------------------- trainmark ops --op allreduce
ALLREDUCE_FORMAT = "trainmark-allreduce/1"
ALLREDUCE_FILE = "allreduce.json"   # the worker's result (in a temporary folder)
