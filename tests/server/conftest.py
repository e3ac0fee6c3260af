"""Fixtures of mhsa-server's tests (test_openai.py).

Environment (set by .ci/test-server.sh):
  MHSA_SERVER      the mhsa-server binary (required)
  MHSA_MODEL       the GGUF model file (SmolLM2-135M-Instruct) (required)
  MHSA_GENERATE    the mhsa-generate binary, for the greedy comparison
  MHSA_SERVER_URL  a server already running on the model (with --parallel 8
                   or more); without it the tests start their own
  MHSA_SERVER_CTX  --ctx of those servers (512)
  MHSA_SERVER_THREADS  --threads of the servers the tests start (2)
"""
import os
import signal
import subprocess
import threading
import time

import pytest

# --ctx of the servers (the one of MHSA_SERVER_URL too).
CTX = int(os.environ.get("MHSA_SERVER_CTX", "512"))


class Server:
    """An mhsa-server child process on a free loopback port (port 0, the
    port read from its "listening on http://HOST:PORT" line)."""

    def __init__(self, *extra):
        self.cmd = [os.environ["MHSA_SERVER"], "--model",
                    os.environ["MHSA_MODEL"], "--host", "127.0.0.1",
                    "--port", "0", "--ctx", str(CTX), "--threads",
                    os.environ.get("MHSA_SERVER_THREADS", "2"), *extra]
        self.proc = subprocess.Popen(self.cmd, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        self.stderr = []
        # stderr is drained all the time (ASan's report may be long).
        self._drain = threading.Thread(target=self._read_stderr, daemon=True)
        self._drain.start()
        line = self.proc.stdout.readline()
        if not line.startswith("listening on http://"):
            self.proc.kill()
            self.proc.wait()
            self._drain.join(5)
            raise RuntimeError(f"{self.cmd} did not start: {line!r}\n"
                               + "".join(self.stderr))
        self.url = line.split()[-1]

    def _read_stderr(self):
        for line in self.proc.stderr:
            self.stderr.append(line)

    def stop(self, timeout=60):
        """SIGTERM; returns the exit code (asserted 0 by the callers)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            rc = "hung (killed after SIGTERM)"
        self._drain.join(10)
        return rc


@pytest.fixture(scope="session")
def server_url():
    url = os.environ.get("MHSA_SERVER_URL")
    if url:
        yield url
        return
    s = Server("--parallel", "8")
    yield s.url
    rc = s.stop()
    assert rc == 0, f"mhsa-server exited {rc}:\n" + "".join(s.stderr)


@pytest.fixture
def start_server():
    """Starts servers of a test with extra flags; each must exit 0 on
    SIGTERM at the end."""
    started = []

    def start(*extra):
        s = Server(*extra)
        started.append(s)
        return s

    yield start
    for s in started:
        rc = s.stop()
        assert rc == 0, f"mhsa-server exited {rc}:\n" + "".join(s.stderr)


@pytest.fixture(scope="session")
def client(server_url):
    import openai
    return openai.OpenAI(base_url=server_url + "/v1", api_key="none",
                         max_retries=0, timeout=300)


@pytest.fixture(scope="session")
def model_name(client):
    return client.models.list().data[0].id


def pytest_configure(config):
    config.addinivalue_line("markers", "bad: bad input and lifetime tests "
                            "(also run against the ASan build)")
