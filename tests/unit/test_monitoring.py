"""The monitoring files (deploy/): the alert rules cover what the issue asks for and pass promtool (its
checks and the rules' own unit tests, ``alerts_test.yml``), and the dashboard and the alerts name only
metrics Mnemo exports."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from prometheus_client.metrics import MetricWrapperBase

from shared.app.state_metrics import _families
from shared.metrics import catalogue

ROOT = Path(__file__).resolve().parents[2]
PROMETHEUS = ROOT / "deploy/prometheus"
DASHBOARD = ROOT / "deploy/grafana/mnemo.json"
REQUIRED_ALERTS = {"mnemo_worker_lag_seconds": "worker lag", "mnemo_outbox_oldest_job_age_seconds": "outbox age",
                   "mnemo_reminder_lateness_seconds": "reminder lateness", "mnemo_llm_requests_total": "LLM errors",
                   'outcome="fallback"': "offline fallbacks"}
SUFFIXES = {"counter": ("_total",), "histogram": ("_bucket", "_sum", "_count"), "gauge": ("",)}
MENTIONED = re.compile(r"\bmnemo_[a-z_]+")


def exported_names() -> set[str]:
    names = {f"{metric._name}{suffix}" for metric in vars(catalogue).values() if isinstance(metric, MetricWrapperBase)
             for suffix in SUFFIXES.get(metric._type, ("",))}
    return names | {family.name for family in _families(None, None)}


def alert_rules() -> list[dict]:
    groups = yaml.safe_load((PROMETHEUS / "alerts.yml").read_text(encoding="utf-8"))["groups"]
    return [rule for group in groups for rule in group["rules"]]


def dashboard_expressions() -> list[str]:
    panels = json.loads(DASHBOARD.read_text(encoding="utf-8"))["panels"]
    return [target["expr"] for panel in panels for target in panel.get("targets", [])]


def test_there_is_an_alert_for_each_thing_the_issue_names() -> None:
    expressions = " ".join(rule["expr"] for rule in alert_rules())
    missing = [what for needle, what in REQUIRED_ALERTS.items() if needle not in expressions]
    assert not missing, f"no alert on {missing}"
    for rule in alert_rules():
        assert rule["labels"]["severity"] in {"warning", "critical"}
        assert rule["annotations"]["summary"]


@pytest.mark.parametrize("source", ["alerts", "dashboard"])
def test_alerts_and_dashboard_name_only_exported_metrics(source: str) -> None:
    texts = [rule["expr"] for rule in alert_rules()] if source == "alerts" else dashboard_expressions()
    unknown = sorted({name for text in texts for name in MENTIONED.findall(text)} - exported_names())
    assert not unknown, f"the {source} name metrics Mnemo does not export: {unknown}"


def test_the_dashboard_reads_the_provisioned_data_source() -> None:
    dashboard = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    source = yaml.safe_load((ROOT / "deploy/grafana/provisioning/datasources/prometheus.yml").read_text())
    uid = source["datasources"][0]["uid"]
    assert dashboard["uid"] == "mnemo"
    assert len(dashboard_expressions()) >= 20
    for panel in dashboard["panels"]:
        if panel["type"] != "row":
            assert panel["datasource"]["uid"] == uid, panel["title"]
            assert panel["targets"], panel["title"]


@pytest.mark.parametrize("arguments", [["check", "rules", "alerts.yml"], ["check", "config", "prometheus.yml"],
                                       ["test", "rules", "alerts_test.yml"]], ids=" ".join)
def test_promtool_accepts_the_rules_and_the_configuration(arguments: list[str]) -> None:
    promtool = shutil.which("promtool")
    assert promtool is not None, "promtool is not installed: run scripts/services.sh (make test does)"
    checked = subprocess.run([promtool, *arguments], cwd=PROMETHEUS, capture_output=True, text=True, timeout=120)
    assert checked.returncode == 0, f"promtool {' '.join(arguments)}:\n{checked.stdout}{checked.stderr}"
