"""The driver's connection to a Ray cluster, with errors that say what to do.

Ray itself waits for an unreachable head for minutes, retrying; a run should
say at once that nothing answers there. So a ``HOST:PORT`` address is probed
with a plain TCP connection first (``connect_timeout_s``).
"""

from __future__ import annotations

import logging
import socket
from typing import Any

from geak_core.api.errors import OptionError

from geak_executor_ray.options import RAY_MISSING, RayExecutorOptions

START_HINT = ("start a cluster with `ray start --head` on one machine and `ray start "
              "--address=HEAD:6379` on the others, then run geak-core on one of them with "
              "address = \"auto\", or use address = \"local\" for a private one-machine cluster")


def import_ray() -> Any:
    try:
        import ray
    except ImportError as exc:
        raise OptionError("name", RAY_MISSING) from exc
    return ray


def _probe(address: str, timeout_s: float) -> None:
    """Raise OptionError unless something accepts a TCP connection at ``HOST:PORT``."""
    host, _, port = address.rpartition(":")
    host = host.strip("[]")
    try:
        with socket.create_connection((host, int(port)), timeout=timeout_s):
            pass
    except OSError as exc:
        reason = f"no answer within {timeout_s:g} s" if isinstance(exc, socket.timeout) \
            else (exc.strerror or str(exc))
        raise OptionError("address", f"no Ray cluster answers at {address} ({reason})",
                          START_HINT) from exc


class Connection:
    """This process's connection to the cluster; ``close`` ends what ``open`` began.

    A process already connected (an application that called ``ray.init`` itself)
    keeps its connection: ``address`` is not consulted and ``close`` leaves it.
    """

    def __init__(self, settings: RayExecutorOptions) -> None:
        self.settings = settings
        self.ray = import_ray()
        self.owned = False

    def open(self) -> None:
        ray = self.ray
        if ray.is_initialized():
            return
        address = self.settings.address
        kwargs: dict[str, Any] = {"namespace": self.settings.namespace, "log_to_driver": False,
                                  "logging_level": logging.WARNING}
        if address == "local":
            kwargs["include_dashboard"] = False
        elif not address.startswith(("ray://", "auto")):
            _probe(address, self.settings.connect_timeout_s)
        try:
            ray.init(address=None if address == "local" else address, **kwargs)
        except ConnectionError as exc:
            where = "on this machine" if address == "auto" else f"at {address}"
            raise OptionError("address", f"no Ray cluster runs {where} ({str(exc).splitlines()[0]})",
                              START_HINT) from exc
        except (RuntimeError, ValueError) as exc:
            raise OptionError("address", f"cannot connect to the Ray cluster at {address}: "
                                         f"{str(exc).splitlines()[0]}", START_HINT) from exc
        self.owned = True

    @property
    def can_grow(self) -> bool:
        """Whether the cluster may gain nodes (not a private instance this process started)."""
        return not (self.owned and self.settings.address == "local")

    def resources(self) -> dict[str, float]:
        return dict(self.ray.cluster_resources())

    def close(self) -> None:
        if self.owned and self.ray.is_initialized():
            self.ray.shutdown()
        self.owned = False
