"""Shared by lockcheck's Python lock adapters (redispy/, tooz/)."""
import os


def follow_dial_map():
    """Dial where LOCKCHECK_DIAL_MAP says. lockcheck's Sentinels name the
    master at the address its replicas use (behind the proxy a partition
    cuts); clients reach it at another. redis-py's Sentinel client (tooz's
    Redis driver uses it too) dials what discover_master returns, so the
    map is applied there."""
    from redis.sentinel import Sentinel
    to = {}
    for pair in filter(None, os.environ.get("LOCKCHECK_DIAL_MAP", "").split(",")):
        frm, addr = pair.split("=", 1)
        to[frm] = addr.rsplit(":", 1)
    if to:
        discover = Sentinel.discover_master

        def mapped(self, service_name):
            host, port = discover(self, service_name)
            host, port = to.get("%s:%s" % (host, port), (host, port))
            return host, int(port)
        Sentinel.discover_master = mapped
