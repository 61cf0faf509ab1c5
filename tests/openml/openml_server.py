"""A local server on 127.0.0.1 that speaks OpenML's REST API (JSON), for the client's tests.

It models its answers on real OpenML responses (tests/fixtures/openml/api, XML kept by
openml-python), converted to OpenML's JSON shape the way the API does: the root element is the
top key, a repeated element is a list (a single one an object), attributes are keys beside the
element's ``value``, and every value is a string. The evaluation listing is the real
``evaluation_list_run12.xml`` entry repeated over the runs of a small world: three tasks (1, 1882
and 119 on datasets 1, 2 and 20), three Weka flows (100, 3, 6742), three runs of each flow on each
task, and one evaluation whose value is not a number.

Misbehaviours, per path prefix: ``fail[prefix] = n`` answers 503 to the next n requests,
``truncate[prefix] = n`` cuts the next n bodies short (the Content-Length promises more), and
``broken`` prefixes answer 500 until removed. Listings past their end answer 412 "No results";
``/data/qualities/20`` answers 412 "No qualities found", like OpenML for a dataset without them;
a study other than 146 answers 412 "Unknown study" (code 601, as OpenML does). ``xml_errors``
sends errors as OpenML's XML error body.
"""

from __future__ import annotations

import copy
import json
import threading
import xml.etree.ElementTree as ET
from typing import Any

from tests.conftest import FIXTURES
from tests.httpserver import Handler, LocalServer, Reply, Request

API_FIXTURES = FIXTURES / "openml" / "api"
PREFIX = "/api/v1/json"

TASKS = {1: 1, 1882: 2, 119: 20}  # task -> dataset
FLOWS = (100, 3, 6742)
RUNS_PER_PAIR = 3
MALFORMED_RUN = 9999


def xml_to_json(text: str) -> dict[str, Any]:
    """An OpenML XML response as the JSON API gives it."""
    root = ET.fromstring(text)

    def tag(element: ET.Element) -> str:
        return element.tag.rsplit("}", 1)[-1]

    def convert(element: ET.Element) -> Any:
        children = list(element)
        value = (element.text or "").strip()
        if not children:
            return {**element.attrib, "value": value} if element.attrib else value
        out: dict[str, Any] = dict(element.attrib)
        for child in children:
            name, item = tag(child), convert(child)
            if name in out:
                out[name] = out[name] if isinstance(out[name], list) else [out[name]]
                out[name].append(item)
            else:
                out[name] = item
        return out

    return {tag(root): convert(root)}


def load(name: str) -> dict[str, Any]:
    return xml_to_json((API_FIXTURES / name).read_text(encoding="utf-8"))


def world_runs() -> list[dict[str, Any]]:
    """The runs of the world: (run id, task, flow, data, values...)."""
    names = {d: load(f"data_{d}.xml")["data_set_description"]["name"] for d in TASKS.values()}
    flows = {f: load(f"flow_{f}.xml")["flow"]["name"] for f in FLOWS}
    runs = []
    run_id = 1000
    for task, data in TASKS.items():
        for flow in FLOWS:
            for i in range(RUNS_PER_PAIR):
                run_id += 1
                runs.append(
                    {
                        "run_id": run_id,
                        "task_id": task,
                        "setup_id": flow * 10 + i,
                        "flow_id": flow,
                        "flow_name": flows[flow],
                        "data_id": data,
                        "data_name": names[data],
                        "upload_time": f"2014-10-{6 + i:02d}T23:38:13",
                        "predictive_accuracy": round(0.5 + ((run_id * 37) % 45) / 100, 4),
                        "area_under_roc_curve": round(0.6 + ((run_id * 11) % 35) / 100, 4)
                        if flow == 100
                        else None,
                        "usercpu_time_millis": float((run_id * 13) % 500 + 10),
                    }
                )
    return runs


class OpenMLServer(LocalServer):
    """OpenML's JSON API over the world above."""

    def __init__(self) -> None:
        super().__init__()
        self.runs = world_runs()
        self.template = load("evaluation_list_run12.xml")["evaluations"]["evaluation"]
        self.fail: dict[str, int] = {}
        self.truncate: dict[str, int] = {}
        self.broken: set[str] = set()
        self.xml_errors = False  # answer errors with OpenML's XML error body instead of JSON
        self._knobs = threading.Lock()

    def api_hits(self, fragment: str) -> int:
        """Requests whose path contains ``fragment``."""
        return sum(1 for r in self.requests if fragment in r.path)

    def _handler_for(self, path: str) -> Handler | None:
        return super()._handler_for(path) or self._dispatch

    def _take(self, knob: dict[str, int], path: str) -> bool:
        with self._knobs:
            for prefix, left in knob.items():
                if path.startswith(PREFIX + prefix) and left > 0:
                    knob[prefix] = left - 1
                    return True
        return False

    def _dispatch(self, request: Request) -> Reply:
        path = request.path
        if any(path.startswith(PREFIX + p) for p in self.broken):
            return Reply(status=500, body=b"<h1>Internal Server Error</h1>", content_type="text/html")
        if self._take(self.fail, path):
            return Reply(status=503, body=b"Service Unavailable", content_type="text/plain")
        body = self._answer(path[len(PREFIX) :] if path.startswith(PREFIX) else None)
        if isinstance(body, Reply):
            return body
        data = json.dumps(body).encode("utf-8")
        if self._take(self.truncate, path):
            return Reply(
                body=data[: len(data) // 2], content_type="application/json", content_length=len(data)
            )
        return Reply(body=data, content_type="application/json")

    def _error(self, code: str, message: str, status: int = 412) -> Reply:
        if self.xml_errors:  # the body OpenML's XML API sends (the shape of its real error files)
            xml = (
                '<oml:error xmlns:oml="http://openml.org/openml">\n'
                f"  <oml:code>{code}</oml:code>\n  <oml:message>{message}</oml:message>\n</oml:error>\n"
            )
            return Reply(status=status, body=xml.encode("utf-8"), content_type="text/xml; charset=utf-8")
        body = json.dumps({"error": {"code": code, "message": message}}).encode("utf-8")
        return Reply(status=status, body=body, content_type="application/json")

    def _answer(self, path: str | None) -> dict[str, Any] | Reply:
        if path is None:
            return Reply(status=404, body=b"not found", content_type="text/plain")
        parts = path.strip("/").split("/")
        if parts[:2] == ["evaluation", "list"]:
            return self._evaluations(parts[2:])
        if parts[:2] == ["task", "list"]:
            return self._task_list(parts[2:])
        if len(parts) == 2 and parts[0] == "study":
            if parts[1] != "146":
                return self._error("601", "Unknown study")
            study = load("study_get_suite_final.xml")
            study["study"]["tasks"]["task_id"] = [str(t) for t in TASKS]
            return study
        if len(parts) == 2 and parts[0] in ("task", "flow", "data"):
            name = f"{parts[0]}_{parts[1]}.xml"
            if not (API_FIXTURES / name).is_file():
                code = {"task": "151", "flow": "181", "data": "111"}[parts[0]]
                return self._error(code, f"Unknown {parts[0]}")
            return load(name)
        if len(parts) == 3 and parts[:2] == ["data", "qualities"]:
            if not (API_FIXTURES / f"qualities_{parts[2]}.xml").is_file():
                return self._error("362", "No qualities found")
            return load(f"qualities_{parts[2]}.xml")
        return Reply(status=404, body=b"not found", content_type="text/plain")

    def _evaluations(self, parts: list[str]) -> dict[str, Any] | Reply:
        filters = dict(zip(parts[::2], parts[1::2], strict=False))
        function = filters.get("function", "")
        tasks = {int(t) for t in filters["task"].split(",")} if "task" in filters else None
        runs = {int(r) for r in filters["run"].split(",")} if "run" in filters else None
        found = []
        for run in self.runs:
            if run.get(function) is None:
                continue
            if (tasks is not None and run["task_id"] not in tasks) or (
                runs is not None and run["run_id"] not in runs
            ):
                continue
            found.append(self._evaluation(run, function, run[function]))
        if function == "predictive_accuracy" and (tasks is None or 1 in tasks) and runs is None:
            broken = dict(self.runs[0], run_id=MALFORMED_RUN)
            found.append(self._evaluation(broken, function, "n/a"))
        offset = int(filters.get("offset", 0))
        limit = int(filters.get("limit", 10_000))
        page = found[offset : offset + limit]
        if not page:
            return self._error("542", "No results")
        # OpenML's JSON gives one evaluation as an object, several as a list.
        return {"evaluations": {"evaluation": page if len(page) > 1 else page[0]}}

    def _evaluation(self, run: dict[str, Any], function: str, value: Any) -> dict[str, Any]:
        item = copy.deepcopy(self.template)
        for key in (
            "run_id",
            "task_id",
            "setup_id",
            "flow_id",
            "flow_name",
            "data_id",
            "data_name",
            "upload_time",
        ):
            item[key] = str(run[key])
        item["function"] = function
        item["value"] = str(value)
        return item

    def _task_list(self, parts: list[str]) -> dict[str, Any] | Reply:
        filters = dict(zip(parts[::2], parts[1::2], strict=False))
        offset, limit = int(filters.get("offset", 0)), int(filters.get("limit", 10_000))
        tasks = [
            {
                "task_id": str(t),
                "task_type_id": "1",
                "task_type": "Supervised Classification",
                "did": str(d),
                "name": load(f"data_{d}.xml")["data_set_description"]["name"],
                "status": "active",
            }
            for t, d in sorted(TASKS.items())
        ]
        page = tasks[offset : offset + limit]
        if not page:
            return self._error("482", "No results")
        return {"tasks": {"task": page}}
