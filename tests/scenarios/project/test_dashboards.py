"""The Grafana dashboards, their provisioning and docker-compose.yml, checked without any server (no Docker engine
here: nothing is started; tests/scenarios/stack/test_stack_dashboards.py runs the panels' queries on the real stack)."""
from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path, PurePosixPath
from typing import Any

import pytest
from locations import ROOT

DASH = ROOT / "dashboards"
COMPOSE = ROOT / "docker-compose.yml"
STACK_SH = ROOT / "scripts" / "stack.sh"

_spec = importlib.util.spec_from_file_location("dashboards_generate", DASH / "generate.py")
generate = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(generate)


def load_yaml(path: Path) -> Any:
    """PyYAML when the venv has it; otherwise the system Python's (Debian python3-yaml), in a subprocess.
    (pyyaml is not a dependency of agentobs: ask for it in the dev extras to drop the fallback.)"""
    try:
        import yaml
    except ImportError:
        yaml = None
    if yaml is not None:
        return yaml.safe_load(path.read_text())
    for py in ("/usr/bin/python3", shutil.which("python3")):
        if py and Path(py).exists() and Path(py).resolve() != Path(sys.executable).resolve():
            r = subprocess.run([py, "-c", "import json, sys, yaml; json.dump(yaml.safe_load(sys.stdin), sys.stdout)"],
                               input=path.read_text(), capture_output=True, text=True)
            if r.returncode == 0:
                return json.loads(r.stdout)
    pytest.fail("no YAML parser: install pyyaml in the venv (or Debian's python3-yaml)")


def stack_setting(name: str) -> str:
    m = re.search(rf'^{name}="([^"]+)"', STACK_SH.read_text(), re.M)
    assert m, name
    return m.group(1)


def dashboards() -> list[tuple[Path, dict[str, Any]]]:
    paths = sorted((DASH / "json").glob("*.json"))
    assert paths
    return [(p, json.loads(p.read_text())) for p in paths]


def panels(dash: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for p in dash["panels"]:
        if p["type"] == "row":
            out.extend(p.get("panels", []))
        else:
            out.append(p)
    return out


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    return load_yaml(COMPOSE)


@pytest.fixture(scope="module")
def datasources() -> list[dict[str, Any]]:
    out = []
    for f in sorted((DASH / "provisioning" / "datasources").glob("*.y*ml")):
        doc = load_yaml(f)
        assert doc["apiVersion"] == 1
        out.extend(doc["datasources"])
    return out


def container_to_host(compose: dict[str, Any], service: str, container_path: str) -> Path | None:
    """The repository path a container path of a service comes from (its bind mounts), or None."""
    target = PurePosixPath(container_path)
    for vol in compose["services"][service].get("volumes", []):
        parts = vol.split(":")
        src, dst = parts[0], PurePosixPath(parts[1])
        if not src.startswith("./"):
            continue
        if target == dst or dst in target.parents:
            return ROOT / src[2:] / target.relative_to(dst)
    return None


# -- the dashboards ------------------------------------------------------------------------------------------

def test_dashboard_json_is_what_the_generator_builds():
    rendered = generate.render()
    assert sorted(rendered) == sorted(p.name for p, _ in dashboards())
    for name, text in rendered.items():
        assert (DASH / "json" / name).read_text() == text, f"{name} is stale: run python dashboards/generate.py"


def test_every_dashboard_parses_and_every_panel_has_a_query():
    uids = set()
    for path, dash in dashboards():
        assert dash["uid"] and dash["title"] and dash["uid"] not in uids
        uids.add(dash["uid"])
        ids = [p["id"] for p in dash["panels"]]
        assert len(ids) == len(set(ids)), path
        for p in panels(dash):
            assert p["targets"], (path.name, p["title"])
            for t in p["targets"]:
                kind = t.get("datasource", p["datasource"])["type"]
                if kind == "prometheus":
                    assert t["expr"].strip(), (p["title"], t)
                elif kind == "jaeger":
                    assert t["queryType"] == "search" and t["service"], (p["title"], t)
                else:
                    pytest.fail(f"{p['title']}: unexpected datasource type {kind}")
            pos = p["gridPos"]
            assert pos["x"] >= 0 and pos["x"] + pos["w"] <= 24 and pos["h"] > 0, (p["title"], pos)


def test_every_datasource_uid_a_dashboard_references_is_provisioned(datasources):
    provisioned = {d["uid"]: d["type"] for d in datasources}
    assert len(provisioned) == len(datasources), "duplicate datasource uid"
    seen = set()
    for path, dash in dashboards():
        refs = []
        for p in panels(dash):
            refs.append(p["datasource"])
            refs.extend(t["datasource"] for t in p["targets"] if "datasource" in t)
        refs.extend(v["datasource"] for v in dash["templating"]["list"] if "datasource" in v)
        for ref in refs:
            assert ref["uid"] in provisioned, (path.name, ref)
            assert provisioned[ref["uid"]] == ref["type"], (path.name, ref)
            seen.add(ref["uid"])
    assert seen == set(provisioned)            # and nothing provisioned is unused


def test_every_query_uses_metric_names_of_the_contract():
    """Names a typo would silently turn into "no data": only the contract's metrics and the span metrics."""
    known = set()
    for name in (*generate.PROMETHEUS_NAMES.values(), *generate.SPANMETRICS_NAMES):
        known |= {name, f"{name}_bucket", f"{name}_sum", f"{name}_count"}
    functions = {"sum", "rate", "increase", "histogram_quantile", "by", "or", "and", "le", "label_values"}
    for _, dash in dashboards():
        exprs = [t["expr"] for p in panels(dash) for t in p["targets"] if "expr" in t]
        exprs += [v["query"]["query"] for v in dash["templating"]["list"] if v["type"] == "query"]
        for expr in exprs:
            # a metric name is an identifier followed by a selector or a range
            for name in re.findall(r"([a-zA-Z_:][a-zA-Z0-9_:]*)\s*(?=\{)", expr):
                assert name in known or name in functions, (name, expr)
            suffix = r"(?:total|bucket|sum|count|usage|calls|tokens|usd|utilisation)"
            for name in re.findall(r"\(\s*([a-z_]+_" + suffix + r")\s*[,)]", expr):
                assert name in known, (name, expr)


def test_panels_cover_what_users_ask_for():
    exprs = " ".join(t.get("expr", "") for _, d in dashboards() for p in panels(d) for t in p["targets"])
    titles = " ".join(p["title"].lower() for _, d in dashboards() for p in panels(d))
    for needle in ("agentobs_runs_total", "gen_ai_invoke_agent_inference_calls_bucket", "agentobs_run_tokens_bucket",
                   "agentobs_run_cost_usd_bucket", "agentobs_budget_utilisation_bucket",
                   'gen_ai_operation_name="chat"', 'gen_ai_operation_name="execute_tool"', "STATUS_CODE_ERROR",
                   "traces_span_metrics_duration_milliseconds_bucket"):
        assert needle in exprs, needle
    for needle in ("success rate by agent", "runs by stop reason", "steps per run", "tokens per run", "dollars per run",
                   "model call latency", "model call error rate", "tool latency", "tool error rate",
                   "budget utilisation per limit"):
        assert needle in titles, needle


def test_data_links_open_a_jaeger_search_with_service_and_tags():
    links = [(p["title"], link) for _, d in dashboards() for p in panels(d)
             for link in p["fieldConfig"]["defaults"].get("links", [])]
    assert links
    for title, link in links:
        url = link["url"]
        assert url.startswith("${jaeger_url}/search?service="), (title, url)
        assert "&tags=%7B" in url and "&start=${__from}000&end=${__to}000" in url, (title, url)
        for label in re.findall(r"__field\.labels\.(\w+)", url):
            panel = next(p for _, d in dashboards() for p in panels(d) if p["title"] == title)
            for t in panel["targets"]:           # the label must survive the panel's aggregation
                assert re.search(rf"by \([^)]*\b{label}\b", t["expr"]), (title, label, t["expr"])


def test_the_jaeger_url_variable_is_where_compose_publishes_jaeger(compose):
    ports = compose["services"]["jaeger"]["ports"]
    published = {p.rsplit(":", 1)[1]: p.rsplit(":", 1)[0] for p in ports}
    host, port = published["16686"].split(":")
    for _, dash in dashboards():
        var = next(v for v in dash["templating"]["list"] if v["name"] == "jaeger_url")
        assert var["query"] == f"http://{host}:{port}"


# -- provisioning ------------------------------------------------------------------------------------------

def test_provisioned_datasources_point_at_the_compose_services(datasources, compose):
    by_type = {d["type"]: d for d in datasources}
    assert set(by_type) == {"prometheus", "jaeger"}
    assert by_type["prometheus"]["url"] == "http://prometheus:9090" and "prometheus" in compose["services"]
    assert by_type["jaeger"]["url"] == "http://jaeger:16686" and "jaeger" in compose["services"]
    # Grafana's $__rate_interval follows the datasource's scrape interval: the compose Prometheus config's
    prom = load_yaml(ROOT / "prometheus" / "prometheus.compose.yml")
    assert by_type["prometheus"]["jsonData"]["timeInterval"] == prom["global"]["scrape_interval"]
    linked = by_type["jaeger"]["jsonData"]["tracesToMetrics"]["datasourceUid"]
    assert linked == by_type["prometheus"]["uid"]


def test_dashboard_providers_point_at_the_dashboard_json(compose):
    files = sorted((DASH / "provisioning" / "dashboards").glob("*.y*ml"))
    assert files
    for f in files:
        doc = load_yaml(f)
        assert doc["apiVersion"] == 1
        for provider in doc["providers"]:
            assert provider["type"] == "file"
            host = container_to_host(compose, "grafana", provider["options"]["path"])
            assert host is not None, f"{provider['options']['path']} is not mounted into the grafana service"
            assert host.resolve() == (DASH / "json").resolve()
            assert sorted(host.glob("*.json")), host
    home = compose["services"]["grafana"]["environment"]["GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH"]
    assert container_to_host(compose, "grafana", home).is_file()
    # Grafana reads /etc/grafana/provisioning/{datasources,dashboards}: the two folders are mounted there
    for kind in ("datasources", "dashboards"):
        assert container_to_host(compose, "grafana", f"/etc/grafana/provisioning/{kind}") == \
            DASH / "provisioning" / kind


# -- docker-compose.yml ----------------------------------------------------------------------------------------

CORE_SERVICES = {"archive-init", "collector", "jaeger-init", "jaeger", "prometheus", "grafana"}
PROFILES = {"opensearch": {"opensearch"}, "scale": {"dask-scheduler", "dask-worker-1", "dask-worker-2"}}
DASK_SERVICES = PROFILES["scale"]


def compose_default(text: str) -> str:
    """A compose value with each ``${VAR:-default}`` replaced by its default (what runs when VAR is unset)."""
    return re.sub(r"\$\{[A-Z0-9_]+:-([^}]*)\}", r"\1", text)


def test_compose_images_are_pinned_to_the_versions_the_tests_run(compose):
    images = {name: s["image"] for name, s in compose["services"].items()}
    assert set(images) == CORE_SERVICES | set().union(*PROFILES.values())
    assert images["archive-init"] == images["jaeger-init"] == images["prometheus"]     # no other image to pull
    for name, image in images.items():
        repo, _, tag = image.partition(":")
        # the official dask image has one tag per Python minor version: <dask release>-py3.NN
        pattern = r"\d{4}\.\d+\.\d+-py3\.\d+" if name in DASK_SERVICES else r"v?\d+\.\d+\.\d+"
        assert tag and tag != "latest" and "@" not in repo and re.fullmatch(pattern, tag), (name, image)
    assert len({images[n] for n in DASK_SERVICES}) == 1 and images["dask-scheduler"].startswith("ghcr.io/dask/dask:")
    assert images["opensearch"].startswith("opensearchproject/opensearch:")
    assert images["collector"] == f"otel/opentelemetry-collector-contrib:{stack_setting('OTELCOL_VERSION')}"
    assert images["jaeger"] == f"jaegertracing/jaeger:{stack_setting('JAEGER_VERSION')}"
    assert images["prometheus"] == "prom/prometheus:v2.42.0"            # Debian bookworm's 2.42, which tests run
    assert images["grafana"].startswith("grafana/grafana:")


def test_compose_publishes_ports_on_127_0_0_1_only(compose):
    published = []
    for name, s in compose["services"].items():
        for p in s.get("ports", []):
            assert isinstance(p, str) and p.startswith("127.0.0.1:") and p.count(":") == 2, (name, p)
            published.append(int(p.split(":")[1]))
        assert "network_mode" not in s, name                  # host networking would bypass the 127.0.0.1 bind
    assert len(published) == len(set(published))
    assert {4317, 4318, 16686, 9090, 3000} <= set(published)


def test_compose_maps_the_standard_otlp_ports_to_the_collectors_listeners(compose):
    cfg = (ROOT / "collector" / "config.yaml").read_text()
    env = compose["services"]["collector"]["environment"]

    def listener(setting: str) -> str:
        if setting in env:
            return str(env[setting])
        m = re.search(rf"\$\{{env:{setting}:-(\d+)\}}", cfg)
        assert m, setting
        return m.group(1)
    ports = {p.split(":")[1]: p.split(":")[2] for p in compose["services"]["collector"]["ports"]}
    assert ports["4317"] == listener("AGENTOBS_COLLECTOR_OTLP_GRPC_PORT")
    assert ports["4318"] == listener("AGENTOBS_COLLECTOR_OTLP_HTTP_PORT")
    assert env["AGENTOBS_STACK_HOST"] == "0.0.0.0"      # inside the container; published on 127.0.0.1 only
    jaeger_cfg = (ROOT / "jaeger" / "config.yaml").read_text()
    jaeger_otlp = re.search(r"\$\{env:AGENTOBS_JAEGER_OTLP_GRPC_PORT:-(\d+)\}", jaeger_cfg).group(1)
    assert env["AGENTOBS_JAEGER_OTLP_GRPC_ENDPOINT"] == f"jaeger:{jaeger_otlp}"
    jaeger_ui = re.search(r"\$\{env:AGENTOBS_JAEGER_QUERY_HTTP_PORT:-(\d+)\}", jaeger_cfg).group(1)
    assert any(p.endswith(f":{jaeger_ui}") for p in compose["services"]["jaeger"]["ports"])
    assert compose["services"]["jaeger"]["environment"]["AGENTOBS_PROMETHEUS_URL"] == "http://prometheus:9090"


def test_every_mounted_config_file_exists_and_is_the_one_the_tests_run(compose):
    mounts = {}
    for name, s in compose["services"].items():
        for vol in s.get("volumes", []):
            src = vol.split(":")[0]
            if src.startswith("./"):
                path = ROOT / src[2:]
                assert path.exists(), (name, vol)
                mounts.setdefault(name, []).append(path)
            else:
                assert src in compose.get("volumes", {}), (name, vol)       # a named volume
    assert ROOT / "collector" / "config.yaml" in mounts["collector"]
    assert ROOT / "jaeger" / "config.yaml" in mounts["jaeger"]
    assert ROOT / "jaeger" / "config-opensearch.yaml" in mounts["jaeger"]
    assert ROOT / "jaeger" / "ui-config.json" in mounts["jaeger"]
    assert ROOT / "prometheus" / "prometheus.compose.yml" in mounts["prometheus"]
    # the commands read the mounted files
    collector = compose["services"]["collector"]
    cfg = collector["command"][0].split("=", 1)[1]
    assert container_to_host(compose, "collector", cfg) == ROOT / "collector" / "config.yaml"
    jaeger = compose["services"]["jaeger"]
    jaeger_cfg = jaeger["command"][0].split("=", 1)[1]
    assert container_to_host(compose, "jaeger", compose_default(jaeger_cfg)) == ROOT / "jaeger" / "config.yaml"
    # AGENTOBS_JAEGER_CONFIG picks another file of the same mounted folder
    opensearch_cfg = jaeger_cfg.replace("${AGENTOBS_JAEGER_CONFIG:-config.yaml}", "config-opensearch.yaml")
    assert container_to_host(compose, "jaeger", opensearch_cfg) == ROOT / "jaeger" / "config-opensearch.yaml"
    assert container_to_host(compose, "jaeger", jaeger["environment"]["AGENTOBS_JAEGER_UI_CONFIG"]) == \
        ROOT / "jaeger" / "ui-config.json"
    prom_cfg = next(a.split("=", 1)[1] for a in compose["services"]["prometheus"]["command"]
                    if a.startswith("--config.file="))
    assert container_to_host(compose, "prometheus", prom_cfg) == ROOT / "prometheus" / "prometheus.compose.yml"


def test_the_compose_prometheus_config_is_the_template_filled_by_stack_sh():
    """prometheus/prometheus.yml is a template (Prometheus 2.x expands no variables): stack.sh fills it for the
    tests, and its prometheus-config command printed the committed compose variant."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTOBS_")}
    env.update(AGENTOBS_PROMETHEUS_TARGET_HOST="collector", AGENTOBS_PROMETHEUS_SCRAPE_INTERVAL="5s")
    r = subprocess.run([str(STACK_SH), "prometheus-config"], env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    committed = (ROOT / "prometheus" / "prometheus.compose.yml").read_text()
    assert r.stdout == committed, ("run: AGENTOBS_PROMETHEUS_TARGET_HOST=collector "
                                   "AGENTOBS_PROMETHEUS_SCRAPE_INTERVAL=5s "
                                   "scripts/stack.sh prometheus-config > prometheus/prometheus.compose.yml")
    doc = load_yaml(ROOT / "prometheus" / "prometheus.compose.yml")
    targets = {c["job_name"]: c["static_configs"][0]["targets"] for c in doc["scrape_configs"]}
    assert targets == {"agentobs-collector-exporter": ["collector:14889"], "agentobs-collector": ["collector:14888"]}
    if shutil.which("promtool"):
        check = subprocess.run(["promtool", "check", "config", str(ROOT / "prometheus" / "prometheus.compose.yml")],
                               capture_output=True, text=True)
        assert check.returncode == 0, check.stdout + check.stderr


def test_the_jaeger_ui_config_turns_the_monitor_tab_on():
    ui = json.loads((ROOT / "jaeger" / "ui-config.json").read_text())
    assert ui["monitor"]["menuEnabled"] is True
    cfg = (ROOT / "jaeger" / "config.yaml").read_text()
    assert "config_file: ${env:AGENTOBS_JAEGER_UI_CONFIG:-}" in cfg
    assert "normalize_calls: true" in cfg and "normalize_duration: true" in cfg


# -- backend defaults (issue 10, point 8) ------------------------------------------------------------------------

def test_grafana_has_no_default_admin_password(compose):
    env = compose["services"]["grafana"]["environment"]
    # compose refuses to start until GF_ADMIN_PASSWORD is set: no fallback value, hence no admin/admin
    assert re.fullmatch(r"\$\{GF_ADMIN_PASSWORD:\?[^}]+\}", env["GF_SECURITY_ADMIN_PASSWORD"])
    assert env.get("GF_AUTH_ANONYMOUS_ORG_ROLE") == "Viewer"
    text = COMPOSE.read_text()
    assert not re.search(r"admin[/:]admin", text, re.I)
    for doc in (ROOT / "README.md", ROOT / "docs" / "stack.md"):
        assert "GF_ADMIN_PASSWORD" in doc.read_text(), doc.name


def test_prometheus_lifecycle_api_is_off_everywhere(compose):
    assert not [a for a in compose["services"]["prometheus"]["command"] if "lifecycle" in a]
    for path in (COMPOSE, ROOT / "scripts" / "stack.sh", *sorted((ROOT / "prometheus").rglob("*"))):
        if path.is_dir():
            continue
        assert "--web.enable-lifecycle" not in path.read_text(), path.name


def test_the_collector_runs_as_a_non_root_user_with_a_private_archive(compose):
    collector = compose["services"]["collector"]
    uid, _, gid = str(collector["user"]).partition(":")
    assert int(uid) != 0 and int(gid or uid) != 0
    assert collector["depends_on"]["archive-init"] == {"condition": "service_completed_successfully"}
    archive = collector["environment"]["AGENTOBS_COLLECTOR_ARCHIVE"]
    init = compose["services"]["archive-init"]
    script = " ".join(init["command"])
    folder = str(PurePosixPath(archive).parent)
    assert f"chown -R {uid}:{gid} {folder}" in script
    assert f"chmod 700 {folder}" in script and f"chmod 600 {archive}" in script and f"touch {archive}" in script
    assert any(v.startswith("archive:") and v.endswith(folder) for v in init["volumes"])
    assert any(v.startswith("archive:") and v.endswith(folder) for v in collector["volumes"])
    config = load_yaml(ROOT / "collector" / "config.yaml")
    assert config["exporters"]["file/archive"]["directory_permissions"] == "0700"


def test_error_type_is_bounded_before_the_span_metrics(compose):
    config = load_yaml(ROOT / "collector" / "config.yaml")
    pipelines = config["service"]["pipelines"]
    # span_metrics gets spans only through the pipeline that bounds error.type; Jaeger and the archive do not
    assert "span_metrics" not in pipelines["traces"]["exporters"]
    assert "forward/span_metrics" in pipelines["traces"]["exporters"]
    feeding = [name for name, p in pipelines.items() if "span_metrics" in p.get("exporters", [])]
    assert feeding == ["traces/span_metrics"]
    assert pipelines["traces/span_metrics"]["processors"] == ["transform/error_type"]
    (group,) = config["processors"]["transform/error_type"]["trace_statements"]
    assert group["statements"] == ['set(span.attributes["error.type"], "_OTHER")']
    assert "IsMatch" in group["conditions"][0] and "Len(" in group["conditions"][0]
    assert "error.type" in str(config["connectors"]["span_metrics"]["dimensions"])



# -- issue 14: Jaeger on disk, the optional profiles ---------------------------------------------------------------

def _uid(service: dict[str, Any]) -> int:
    return int(str(service["user"]).partition(":")[0])


def test_the_optional_services_start_only_with_their_profile(compose):
    services = compose["services"]
    for name in CORE_SERVICES:
        assert "profiles" not in services[name], name              # `docker compose up` starts exactly these
    for profile, names in PROFILES.items():
        for name in names:
            assert services[name]["profiles"] == [profile], name
    # a core service may wait for a profile's service only as an optional dependency
    for name in CORE_SERVICES:
        deps = services[name].get("depends_on", {})
        for dep, cond in (deps.items() if isinstance(deps, dict) else ((d, {}) for d in deps)):
            if dep not in CORE_SERVICES:
                assert cond.get("required") is False, (name, dep)


def test_services_run_as_non_root_users(compose):
    services = compose["services"]
    # the init one-shots chown volumes as root; grafana and prometheus keep their images' own non-root users
    for name in ("collector", "jaeger", "opensearch", *DASK_SERVICES):
        assert _uid(services[name]) != 0, name
    for name in ("archive-init", "jaeger-init"):
        assert str(services[name]["user"]) == "0:0" and services[name]["restart"] == "no"


def test_jaeger_keeps_its_badger_folder_on_a_named_volume_prepared_for_its_user(compose):
    jaeger, init = compose["services"]["jaeger"], compose["services"]["jaeger-init"]
    env = jaeger["environment"]
    folder = env["AGENTOBS_JAEGER_BADGER_DIR"]
    mounts = [v.split(":") for v in jaeger["volumes"]]
    volume = next(src for src, dst, *_ in mounts if folder.startswith(dst.rstrip("/") + "/"))
    assert volume in compose["volumes"]                                  # a named volume, kept across restarts
    assert any(v.startswith(f"{volume}:") for v in init["volumes"])
    script = " ".join(init["command"])
    uid = _uid(jaeger)
    assert f"chown -R {uid}:{uid} {folder}" in script and f"chmod 700 {folder}" in script
    assert jaeger["depends_on"]["jaeger-init"] == {"condition": "service_completed_successfully"}
    # the retention: one default, the same in compose, the config and stack.sh
    ttl_default = re.search(r"\$\{env:AGENTOBS_JAEGER_SPAN_TTL:-([^}]+)\}",
                            (ROOT / "jaeger" / "config.yaml").read_text())
    assert ttl_default and compose_default(env["AGENTOBS_JAEGER_SPAN_TTL"]) == ttl_default.group(1)
    assert f'AGENTOBS_JAEGER_SPAN_TTL="${{AGENTOBS_JAEGER_SPAN_TTL:-{ttl_default.group(1)}}}"' in STACK_SH.read_text()


def test_the_opensearch_profile_points_jaeger_at_its_unpublished_node(compose):
    services = compose["services"]
    node = services["opensearch"]
    assert "ports" not in node                                  # reached on the compose network only
    assert any(v.split(":")[0] in compose["volumes"] for v in node["volumes"])
    url = services["jaeger"]["environment"]["AGENTOBS_OPENSEARCH_URL"]
    assert url == "http://opensearch:9200"
    cfg = load_yaml(ROOT / "jaeger" / "config-opensearch.yaml")
    (backend,) = cfg["extensions"]["jaeger_storage"]["backends"].values()
    assert backend["opensearch"]["server_urls"] == ["${env:AGENTOBS_OPENSEARCH_URL:-http://127.0.0.1:9200}"]
    assert services["jaeger"]["depends_on"]["opensearch"] == {"condition": "service_healthy", "required": False}
    assert "healthcheck" in node


def test_the_scale_profile_workers_read_the_archive_read_only(compose):
    services = compose["services"]
    archive = services["collector"]["environment"]["AGENTOBS_COLLECTOR_ARCHIVE"]
    folder = str(PurePosixPath(archive).parent)
    scheduler = services["dask-scheduler"]
    port = scheduler["command"][scheduler["command"].index("--port") + 1]
    assert f"127.0.0.1:{port}:{port}" in scheduler["ports"]
    for name in DASK_SERVICES - {"dask-scheduler"}:
        worker = services[name]
        assert "archive:" + folder + ":ro" in worker["volumes"], name
        assert not [v for v in worker["volumes"] if not v.endswith(":ro")], name     # every mount read-only
        assert _uid(worker) == _uid(services["collector"])       # the archive folder is 0700, the collector's
        assert f"dask worker tcp://dask-scheduler:{port}" in " ".join(worker["command"]), name
        assert "ports" not in worker and "--memory-limit" in " ".join(worker["command"])
