"""Whether a run is traced, and by which tracer."""

from __future__ import annotations

import os
from importlib.metadata import version
from typing import Any

from ..core._errors import UsageError
from ._spans import tracer_of_call

_own_provider: Any = None
"""The OTLP exporting provider reins set up from the environment, once per process."""


def tracer_for(instrument: Any, parent: tuple[str, str] | None = None) -> Any:
    """The tracer runs are traced with, or None.

    `instrument` is False (off), True (the global tracer provider; one exporting to
    OTEL_EXPORTER_OTLP_ENDPOINT when none is set and that is), a `TracerProvider`, or None:
    on when OTEL_EXPORTER_OTLP_ENDPOINT is set, or, for a subagent's run, when the run whose
    tool call (`parent`: run id, call id) started it is traced (with that run's tracer)."""
    endpoint = _endpoint()
    if instrument is None and not endpoint:
        return None if parent is None else tracer_of_call(*parent)
    if instrument is False:
        return None
    try:
        from opentelemetry import trace

        if instrument is None or instrument is True:
            provider = trace.get_tracer_provider()
            if endpoint and isinstance(provider, trace.ProxyTracerProvider):
                provider = _otlp_provider()
        else:
            provider = instrument
    except ImportError as exc:
        raise UsageError(
            f"tracing needs OpenTelemetry's SDK and OTLP exporter ({exc.name} is missing): "
            "pip install 'reins[otel]' (or unset OTEL_EXPORTER_OTLP_ENDPOINT)"
        ) from None
    return provider.get_tracer("reins", version("reins"))


def _endpoint() -> str:
    return os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or os.environ.get(
        "OTEL_EXPORTER_OTLP_ENDPOINT", ""
    )


def _otlp_provider() -> Any:
    """An SDK provider exporting over OTLP/HTTP as the OTEL_* variables say; its spans are
    sent in batches, the last when the process exits."""
    global _own_provider
    if _own_provider is None:
        from opentelemetry import trace
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor

        named = {} if os.environ.get("OTEL_SERVICE_NAME") else {"service.name": "reins"}
        _own_provider = TracerProvider(resource=Resource.create(named))
        _own_provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
        trace.set_tracer_provider(_own_provider)
    return _own_provider
