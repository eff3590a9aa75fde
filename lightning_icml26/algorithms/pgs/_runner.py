"""The script the :class:`~lightning_icml26.algorithms.pgs.Sandbox` child process runs (never imported).

It reads ``spec.json`` from its working directory, defines the candidate and the property checks, runs
the cases one by one under a per-case interval timer and appends one JSON line per case to
``results.jsonl`` (flushed after each case, so the parent knows how far a killed child got). With a
``shrink`` entry it instead asks Hypothesis for the simplest input on which the candidate fails.
Only the standard library is used, plus Hypothesis in shrink mode.
"""

from __future__ import annotations

import ast
import copy
import json
import signal
import sys
from typing import Any


class _CaseTimeout(BaseException):
    """Raised by the interval timer inside a case that ran past its time."""


def _on_alarm(signum: int, frame: Any) -> None:
    raise _CaseTimeout


def _short(value: Any, limit: int = 300) -> str:
    try:
        text = repr(value)
    except BaseException as exc:  # a repr that fails is reported, not fatal
        text = f"<unprintable {type(exc).__name__}>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _error(exc: BaseException) -> str:
    return _short(f"{type(exc).__name__}: {exc}", 500)[1:-1]


def _timed(seconds: float, fn: Any, *args: Any) -> Any:
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        return fn(*args)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)


def _traced(lines: set[int]) -> Any:
    def tracer(frame: Any, event: str, arg: Any) -> Any:
        if frame.f_code.co_filename != "<candidate>":
            return None
        if event == "line":
            lines.add(frame.f_lineno)
        return tracer

    return tracer


def _check(
    entry: Any, props: list[tuple[str, Any]], args: tuple, expected: Any, seconds: float, trace: bool = False
) -> dict:
    """Run one case; return its record without the input (with the executed candidate lines when ``trace``)."""
    lines: set[int] = set()
    try:
        if trace:
            sys.settrace(_traced(lines))
        try:
            result = _timed(seconds, entry, *copy.deepcopy(args))
        finally:
            sys.settrace(None)
    except _CaseTimeout:
        return {"kind": "timeout", "error": f"ran past {seconds} s", "lines": sorted(lines)}
    except BaseException as exc:
        return {"kind": "runtime_error", "error": _error(exc), "lines": sorted(lines)}
    record: dict[str, Any] = {"kind": "pass", "output": _short(result), "lines": sorted(lines)}
    if expected is not None:
        try:
            same = bool(result == expected[0])
        except BaseException as exc:
            same, record["error"] = False, _error(exc)
        if not same:
            record["kind"], record["expected"] = "wrong_answer", _short(expected[0])
            return record
    for name, prop in props:
        try:
            verdict = _timed(seconds, prop, copy.deepcopy(args), copy.deepcopy(result))
        except _CaseTimeout:
            verdict, message = False, f"property ran past {seconds} s"
        except AssertionError as exc:
            verdict, message = False, _error(exc)
        except BaseException as exc:
            verdict, message = False, "error in property: " + _error(exc)
        else:
            message = "returned False"
        if verdict is False:
            record.update(kind="property_violation", property=name, error=message)
            return record
    return record


def main() -> None:
    """Run the spec in the working directory."""
    with open("spec.json", encoding="utf-8") as fh:
        spec = json.load(fh)
    signal.signal(signal.SIGALRM, _on_alarm)
    seconds = float(spec["case_seconds"])

    def emit(record: dict) -> None:
        with open("results.jsonl", "a", encoding="utf-8") as out:
            out.write(json.dumps(record) + "\n")

    namespace: dict[str, Any] = {"__name__": "candidate"}
    try:
        _timed(seconds, exec, compile(spec["program"], "<candidate>", "exec"), namespace)
        entry = namespace[spec["entry_point"]]
        props = []
        for name, source in spec["properties"]:
            prop_ns: dict[str, Any] = {"__name__": "property"}
            exec(compile(source, f"<property {name}>", "exec"), prop_ns)
            props.append((name, prop_ns[name]))
    except BaseException as exc:
        emit({"index": -1, "kind": "runtime_error", "error": "could not load the program: " + _error(exc)})
        return
    if spec.get("shrink"):
        sys.path.extend(spec["shrink"]["path"])
        import hypothesis
        from hypothesis import strategies as st

        strategy = eval(spec["shrink"]["strategy"], {"st": st})  # the problem's own strategy text

        def fails(args: tuple) -> bool:
            return _check(entry, props, args, None, seconds)["kind"] != "pass"

        conf = hypothesis.settings(
            max_examples=int(spec["shrink"]["max_examples"]),
            database=None,
            deadline=None,
            derandomize=True,
            suppress_health_check=list(hypothesis.HealthCheck),
        )
        try:
            found = hypothesis.find(strategy, fails, settings=conf)
        except hypothesis.errors.NoSuchExample:
            emit({"index": 0, "kind": "pass", "input": None})
            return
        record = _check(entry, props, found, None, seconds)
        record.pop("lines")
        emit({"index": 0, "input": repr(found), **record})
        return
    for index, case in enumerate(spec["cases"]):
        if index < spec["start"]:
            continue
        args = ast.literal_eval(case["input"])
        expected = None if case["expected"] is None else (ast.literal_eval(case["expected"]),)
        record = _check(entry, props, args, expected, seconds, bool(spec.get("trace")))
        if not spec.get("trace"):
            record.pop("lines")
        emit({"index": index, **record})


if __name__ == "__main__":
    main()
