"""MLPerf Training results as the projection needs them: time to train, samples to converge, throughput.

From a submitter folder (``systems/<system>.json``, ``results/<system>/<benchmark>/result_*.txt``):
per system the accelerator model and count (``number_of_nodes x accelerators_per_node``) and the
interconnects it names; per run the global batch, the minutes from ``run_start`` to ``run_stop`` (the
MLPerf score), and how far it trained to converge, in the unit MLPerf's RCP checker uses: the
``epoch_num`` or ``samples_count`` of the last evaluation (samples for bert, stable diffusion and the
LLMs, epochs for the others). Epochs become samples through the dataset's training set size
(``DATASET_SAMPLES``), which the log's ``train_samples`` is checked against: SSD/RetinaNet logs steps per
epoch there, not samples, and a log that says neither is reported as such. Files are read with a size
cap, result files with the hardened MLLOG reader (trainmark.format.mllog_read), system descriptions as
JSON only.
"""
from __future__ import annotations

import json
import statistics
from dataclasses import dataclass
from pathlib import Path

from trainmark.format import layout
from trainmark.format.mllog_read import read_records
from trainmark.format.timeline_read import Replay
from trainmark.harness.scale import projection as scale_model

FILE_CAP = 64 << 20   # an MLPerf result file is a few MB at most

# Training samples per epoch of each MLPerf Training dataset (the benchmark's reference README)
DATASET_SAMPLES = {
    "resnet": 1_281_167,        # ImageNet-1k train
    "ssd": 1_170_301,           # OpenImages-v6 MLPerf subset (264 classes), train
    "retinanet": 1_170_301,
    "maskrcnn": 117_266,        # COCO 2017 train with annotations
    "rnnt": 281_241,            # LibriSpeech train, utterances of at most 15.3 s
    "dlrm_dcnv2": 4_195_197_692,  # Criteo 1TB click logs, multi-hot, 23 days
    "gnn": 94_605_581,          # IGBH-full: the labelled paper nodes used for training
    "rgat": 94_605_581,
}
# Benchmarks whose evaluations count samples (RCP unit "samples"), not epochs
SAMPLE_UNIT_BENCHMARKS = {"bert", "stable_diffusion", "llama2_70b_lora", "llama31_405b", "llama31_8b", "gpt3",
                          "flux1", "unet3d"}


@dataclass(frozen=True)
class MLPerfRun:
    """One converged run: the figures of its result file."""

    benchmark: str
    global_batch: int
    minutes: float
    to_converge: float            # epochs or samples (``unit``) at the last evaluation
    unit: str
    samples: float | None         # samples trained to converge (None: epochs with no known dataset size)
    unit_check: str               # what train_samples says about the unit

    @property
    def samples_per_s(self) -> float | None:
        return self.samples / (self.minutes * 60) if self.samples else None


@dataclass(frozen=True)
class SystemDesc:
    """What a published system description says that the projection uses."""

    system: str
    submitter: str
    division: str
    accelerator: str
    accelerators: int
    per_node: int
    interconnect: str             # accelerator_interconnect
    networking: str               # host_networking


def _read_bytes(path: Path) -> bytes:
    with open(path, "rb") as fh:
        raw = fh.read(FILE_CAP + 1)
    if len(raw) > FILE_CAP:
        raise ValueError(f"{path}: larger than {FILE_CAP} bytes")
    return raw


def _progress(event) -> tuple[float | None, str | None]:
    """How far training had got at an event: samples_count, epoch_num (the benchmark's unit) or step_num."""
    meta = event.metadata
    for key, unit in (("samples_count", "samples"), ("epoch_num", None), ("step_num", "steps")):
        if isinstance(meta.get(key), (int, float)) and not isinstance(meta.get(key), bool):
            return float(meta[key]), unit
    return None, None


def _scan(path: Path) -> dict:
    """The keys a run's figures come from; a run that did not end in success has ``status`` != success."""
    seen: dict = {"status": None}
    events = read_records(_read_bytes(path), strict=False)
    start, stop = Replay(events).last("run")  # the last of each
    if start is not None:
        seen["start_ms"] = start.time_ms
    if stop is not None:
        seen["stop_ms"], seen["status"] = stop.time_ms, stop.metadata.get("status")
        seen["stop_progress"] = _progress(stop)
    for e in events:
        if e.key in ("submission_benchmark", "global_batch_size", "train_samples") and e.key not in seen:
            seen[e.key] = e.value
        elif e.key == "eval_accuracy":
            progress, unit = _progress(e)
            if progress is not None:
                seen["progress"], seen["progress_key"] = progress, unit
    # run_stop's own count where it logs one (evaluations may be logged afterwards, out of order)
    if seen.get("stop_progress", (None,))[0] is not None:
        seen["progress"], seen["progress_key"] = seen["stop_progress"]
    return seen


def unit_check(benchmark: str, train_samples, global_batch: int) -> str:
    """What the log's ``train_samples`` is, checked against the dataset size."""
    size = DATASET_SAMPLES.get(benchmark)
    if not isinstance(train_samples, (int, float)) or size is None:
        return "train_samples absent or no dataset size known: not checked"
    if abs(train_samples - size) <= 0.01 * size:
        return f"train_samples {train_samples:g} = the dataset's {size:,} samples"
    if abs(train_samples * global_batch - size) <= global_batch + 0.01 * size:
        return (f"train_samples {train_samples:g} is steps per epoch (x global batch {global_batch} = the "
                f"dataset's {size:,} samples), not samples")
    return f"train_samples {train_samples:g} matches neither the dataset's {size:,} samples nor its steps"


def read_run(path: Path, benchmark: str | None = None) -> MLPerfRun:
    """One result file's figures; ValueError when the run did not converge or lacks a needed key."""
    seen = _scan(path)
    bench = str(seen.get("submission_benchmark") or benchmark or "")
    batch = seen.get("global_batch_size")
    if seen["status"] != "success":
        raise ValueError(f"{path}: run_stop status {seen['status']!r}, not success")
    if not isinstance(batch, int) or batch < 1 or "start_ms" not in seen or "progress" not in seen:
        raise ValueError(f"{path}: needs global_batch_size, run_start, run_stop and an eval_accuracy with "
                         "epoch_num or samples_count")
    progress = seen["progress"] * (batch if seen["progress_key"] == "steps" else 1)  # steps x batch = samples
    unit = ("samples" if bench in SAMPLE_UNIT_BENCHMARKS or seen["progress_key"] in ("samples", "steps")
            else "epochs")
    per_unit = 1 if unit == "samples" else DATASET_SAMPLES.get(bench)
    return MLPerfRun(bench, batch, (seen["stop_ms"] - seen["start_ms"]) / 60000, progress, unit,
                     progress * per_unit if per_unit else None, unit_check(bench, seen.get("train_samples"), batch))


def read_system(submitter_dir: Path, system: str) -> SystemDesc:
    desc = json.loads(_read_bytes(Path(submitter_dir) / layout.SYSTEMS_DIR / layout.system_file(system)))
    per_node = int(desc["accelerators_per_node"])
    return SystemDesc(system, str(desc.get("submitter") or Path(submitter_dir).name),
                      str(desc.get("division", "")), str(desc.get("accelerator_model_name", "")).strip(),
                      int(desc["number_of_nodes"]) * per_node, per_node,
                      str(desc.get("accelerator_interconnect") or ""), str(desc.get("host_networking") or ""))


def olympic_mean(values: list[float]) -> float:
    """MLPerf's score of a set of runs: the mean without the fastest and the slowest."""
    kept = sorted(values)[1:-1] if len(values) >= 3 else list(values)
    return statistics.mean(kept)


@dataclass(frozen=True)
class SystemThroughput:
    system: str
    benchmark: str
    accelerator: str
    accelerators: int
    global_batch: int
    samples_per_s: list[float]      # one per run

    @property
    def median(self) -> float:
        return statistics.median(self.samples_per_s)


def system_runs(submitter_dir: Path, system: str, benchmark: str) -> list[MLPerfRun]:
    runs = sorted((Path(submitter_dir) / layout.RESULTS_DIR / system / benchmark).glob(layout.RESULT_GLOB))
    if not runs:
        raise ValueError(f"{submitter_dir}: no {layout.RESULTS_DIR}/{system}/{benchmark}/{layout.RESULT_GLOB}")
    return [read_run(p, benchmark) for p in runs]


def system_throughput(submitter_dir: Path, system: str, benchmark: str) -> SystemThroughput:
    """Samples/s of each run of one system: samples to converge over run_start..run_stop."""
    desc = read_system(submitter_dir, system)
    measured = system_runs(submitter_dir, system, benchmark)
    batches = {r.global_batch for r in measured}
    if len(batches) != 1:
        raise ValueError(f"{system}/{benchmark}: runs with different global batches {sorted(batches)}")
    if any(r.samples_per_s is None for r in measured):
        raise ValueError(f"{system}/{benchmark}: epochs to converge, but no dataset size known for samples")
    return SystemThroughput(system, benchmark, desc.accelerator, desc.accelerators, batches.pop(),
                            [r.samples_per_s for r in measured])


def validate_pair(small: SystemThroughput, large: SystemThroughput, link: scale_model.Link,
                  gradient_bytes: int, overlap: float = 0.0) -> dict:
    """The flat-ring model of samples/s: ``large`` projected from ``small`` (one link for every hop, no
    convergence), kept as the baseline ``trainmark scale validate`` compares the time-to-train model with.

    The small system's step is split with the model itself: compute = step - exposed all-reduce;
    compute then scales with the local batch of the large system.
    """
    if small.accelerator != large.accelerator:
        raise ValueError(f"different accelerators ({small.accelerator} vs {large.accelerator}): not one system "
                         "at two sizes")
    if small.accelerators == large.accelerators:
        raise ValueError(f"both systems have {small.accelerators} accelerators: not one system at two sizes")
    n1, n2 = small.accelerators, large.accelerators
    predicted = flat_ring_samples_per_s(n1, small.global_batch, small.median, n2, large.global_batch, link,
                                        gradient_bytes, overlap)
    return {"small": small.system, "large": large.system, "accelerators": [n1, n2],
            "measured_samples_per_s": large.median, "predicted_samples_per_s": predicted,
            "error": predicted / large.median - 1, "link": scale_model.link_dict(link),
            "gradient_bytes": gradient_bytes, "overlap": overlap}


def flat_ring_samples_per_s(n1: int, batch1: int, samples_per_s1: float, n2: int, batch2: int,
                            link: scale_model.Link, gradient_bytes: int, overlap: float = 0.0) -> float:
    """Samples/s at ``n2`` accelerators and global batch ``batch2`` from samples/s measured at ``n1``."""
    step1 = batch1 / samples_per_s1
    comm1 = scale_model.allreduce_seconds(n1, gradient_bytes, link)
    # solve step1 = c + max(0, comm1 - overlap c) for the compute c
    compute1 = step1 if comm1 <= overlap * step1 else (step1 - comm1) / (1 - overlap)
    if compute1 <= 0:
        raise ValueError("the link model alone is slower than the measured step: check bandwidth and latency")
    # compute per sample of the local batch: the profile's step at a local batch of one
    profile = scale_model.ComputeProfile(compute1 / (batch1 / n1), 1, gradient_bytes, overlap)
    return batch2 / scale_model.step_seconds(n2, batch2 / n2, profile, link)[0]
