"""API keys in the OS keyring (a real file-backed keyring from keyrings.alt; none at all), and the warning for
plain-http servers, also as `chorus run` shows it."""

import subprocess
import sys

import pytest
from keyring.backends import fail
from keyrings.alt.file import PlaintextKeyring

from app.backends import KeyStore, plain_http_warning
from app.backends.security import KEYRING_SERVICE

URL = "https://gpu-box.example/v1"


@pytest.mark.parametrize("url", ["http://127.0.0.1:8080/v1", "http://localhost:8000/v1", "http://[::1]:9/v1",
                                 "https://gpu-box.example/v1", "https://10.0.0.7/v1"])
def test_no_warning_for_this_machine_or_tls(url):
    assert plain_http_warning(url) is None


@pytest.mark.parametrize("url", ["http://10.0.0.7:8000/v1", "http://gpu-box.lan/v1", "http://203.0.113.9/v1"])
def test_plain_http_to_another_host_is_warned_about(url):
    warning = plain_http_warning(url)
    assert warning and "plain http" in warning and url.split("/")[2] in warning


def file_keyring(tmp_path):
    ring = PlaintextKeyring()
    ring.file_path = str(tmp_path / "keyring.cfg")
    return ring


def test_a_remembered_key_survives_a_restart_and_can_be_forgotten(tmp_path):
    store = KeyStore(backend=file_keyring(tmp_path))
    assert store.persistent and "keyring" in store.where
    assert store.set(URL, "sk-secret-1", remember=True)
    restarted = KeyStore(backend=file_keyring(tmp_path))
    assert restarted.get(URL) == "sk-secret-1"
    assert file_keyring(tmp_path).get_password(KEYRING_SERVICE, URL) == "sk-secret-1"
    restarted.forget(URL)
    assert KeyStore(backend=file_keyring(tmp_path)).get(URL) is None


def test_a_key_not_remembered_lives_for_the_session_only(tmp_path):
    store = KeyStore(backend=file_keyring(tmp_path))
    assert not store.set(URL, "sk-session", remember=False)
    assert store.get(URL) == "sk-session"
    assert KeyStore(backend=file_keyring(tmp_path)).get(URL) is None


def test_without_a_keyring_keys_stay_in_memory_and_say_so():
    store = KeyStore(backend=fail.Keyring())
    assert not store.persistent and "session only" in store.where
    assert not store.set(URL, "sk-mem", remember=True)  # asked to remember, but there is nowhere to
    assert store.get(URL) == "sk-mem"
    assert KeyStore(backend=fail.Keyring()).get(URL) is None


def test_run_warns_about_plain_http_before_trying_the_server(tmp_path):
    jsonl = tmp_path / "in.jsonl"
    jsonl.write_text('{"prompt": "hi", "max_tokens": 2}\n')
    # 192.0.2.0/24 is TEST-NET-1: never routed, so the connection fails (fast or by the connect timeout).
    run = subprocess.run([sys.executable, "-m", "app", "run", str(jsonl), "--server", "http://192.0.2.1:9/v1",
                          "--api-key", "sk-never-printed"], capture_output=True, text=True, timeout=120)
    assert run.returncode == 2
    assert "warning: 192.0.2.1:9 is reached over plain http" in run.stderr
    assert "192.0.2.1" in run.stderr.splitlines()[-1]  # then the connection error, naming the server
    assert "sk-never-printed" not in run.stderr + run.stdout
