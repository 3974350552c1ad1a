"""The dashboard link the views show goes through the Jupyter server's proxy when the scheduler is on the
server's machine (the server extension tells its kernels where that proxy is); other links are kept."""

from jupyter_dist.cluster._dashboard import PROXY_PREFIX_ENV, browser_link


def test_a_link_to_this_machine_goes_through_the_servers_proxy(monkeypatch):
    monkeypatch.setenv(PROXY_PREFIX_ENV, "/user/alice/")
    assert browser_link("http://127.0.0.1:8787/status") == "/user/alice/proxy/8787/status"
    assert (
        browser_link("http://localhost:40111/clusters/abc/status")
        == "/user/alice/proxy/40111/clusters/abc/status"
    )
    assert browser_link("http://127.0.0.1:8787/individual-plots.json?x=1") == (
        "/user/alice/proxy/8787/individual-plots.json?x=1"
    )


def test_other_links_and_servers_without_a_proxy_keep_the_link(monkeypatch):
    monkeypatch.setenv(PROXY_PREFIX_ENV, "/")
    assert browser_link("https://gateway.example.org/clusters/abc/status") == (
        "https://gateway.example.org/clusters/abc/status"
    )
    assert (
        browser_link("/services/dask-gateway/clusters/abc/status")
        == "/services/dask-gateway/clusters/abc/status"
    )
    assert browser_link(None) is None
    monkeypatch.delenv(PROXY_PREFIX_ENV)
    assert browser_link("http://127.0.0.1:8787/status") == "http://127.0.0.1:8787/status"
