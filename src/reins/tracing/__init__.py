"""OpenTelemetry traces of runs, after the GenAI semantic conventions: a span per run
(`invoke_agent`), per model call (`chat`) and per tool call (`execute_tool`).

Off unless asked for (`Agent(instrument=True)`, a `TracerProvider` of yours, or
`OTEL_EXPORTER_OTLP_ENDPOINT` in the environment), and then nothing of it is imported or
runs. Needs the `otel` extra: `pip install 'reins[otel]'`."""

from ._setup import tracer_for
from ._spans import RunSpans

__all__ = ["RunSpans", "tracer_for"]
