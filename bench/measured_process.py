# SPDX-License-Identifier: Apache-2.0
"""One process under measurement for the DDS benches (node_bench, bridge_dds_bench).

It starts a command with its output in a log file, reads its CPU time and RSS (psutil), raises
with the log's tail when it died, and stops it as ``ros2 launch`` does: SIGINT by PID, then
SIGKILL (and a Fast DDS shared-memory clean-up) if it ignores SIGINT. The log is kept only when
the exit code is not 0. The benches import it as a sibling module (their folder is sys.path[0]).
"""

import os
import signal
import subprocess
import tempfile


class MeasuredProcess:
    """A benchmarked process: ``command`` run with its output in a temporary log file."""

    def __init__(self, command, label, *, log_prefix, log_dir=None):
        import psutil

        self.label = label
        self.log = tempfile.NamedTemporaryFile(
            'w+', prefix=log_prefix, suffix='.log', dir=log_dir, delete=False)
        self.process = subprocess.Popen(command, stdout=self.log, stderr=subprocess.STDOUT)
        self.ps = psutil.Process(self.process.pid)

    def cpu_s(self):
        """Return the user + system CPU seconds used so far."""
        times = self.ps.cpu_times()
        return times.user + times.system

    def rss_bytes(self):
        """Return the resident set size in bytes."""
        return self.ps.memory_info().rss

    def check_alive(self):
        """Raise RuntimeError with the log's tail when the process has exited."""
        if self.process.poll() is not None:
            self.log.flush()
            with open(self.log.name) as log:
                text = log.read()[-2000:]
            raise RuntimeError(f'{self.label} exited with {self.process.returncode}:\n{text}')

    def stop(self, timeout=15.0):
        """Stop with SIGINT; SIGKILL and clean shared memory if it hangs; return the exit code."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                print(f'  warning: {self.label} ignored SIGINT for {timeout:g} s: killed',
                      flush=True)
                self.process.kill()
                self.process.wait()
                subprocess.run(['fastdds', 'shm', 'clean'], capture_output=True, check=False)
        self.log.close()
        code = self.process.returncode
        if code == 0:
            os.unlink(self.log.name)
        return code
