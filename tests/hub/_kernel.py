"""Run code in a kernel of a user's server through the hub, as JupyterLab does: the kernel's websocket."""

from __future__ import annotations

import asyncio
import json
import uuid

from tornado.httpclient import HTTPRequest
from tornado.websocket import websocket_connect


def _message(code: str, session: str) -> dict:
    return {
        "header": {
            "msg_id": uuid.uuid4().hex,
            "msg_type": "execute_request",
            "session": session,
            "username": "test",
            "version": "5.3",
        },
        "parent_header": {},
        "metadata": {},
        "content": {"code": code, "silent": False, "store_history": True, "allow_stdin": False},
        "channel": "shell",
        "buffers": [],
    }


async def _execute(ws_url: str, token: str, code: str, timeout: float) -> list[dict]:
    request = HTTPRequest(ws_url, headers={"Authorization": f"token {token}"})
    connection = await websocket_connect(request, max_message_size=64 * 2**20)
    try:
        message = _message(code, uuid.uuid4().hex)
        await connection.write_message(json.dumps(message))
        outputs = []
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            raw = await asyncio.wait_for(connection.read_message(), max(0.1, deadline - loop.time()))
            if raw is None:
                raise ConnectionError("the kernel's websocket closed")
            if isinstance(raw, bytes):
                continue  # a binary frame: widget buffers, not ours
            reply = json.loads(raw)
            if reply.get("parent_header", {}).get("msg_id") != message["header"]["msg_id"]:
                continue
            kind = reply["header"]["msg_type"]
            if kind in ("stream", "display_data", "execute_result", "error", "update_display_data"):
                outputs.append({"type": kind, **reply["content"]})
            if kind == "status" and reply["content"]["execution_state"] == "idle":
                return outputs
    finally:
        connection.close()


def execute(server_url: str, token: str, kernel_id: str, code: str, timeout: float = 300) -> list[dict]:
    """The outputs of ``code`` run in that kernel; an error output fails the caller's assertion with its text."""
    ws_url = server_url.replace("http://", "ws://") + f"/api/kernels/{kernel_id}/channels"
    return asyncio.run(_execute(ws_url, token, code, timeout))


def text(outputs: list[dict]) -> str:
    parts = []
    for out in outputs:
        if out["type"] == "stream":
            parts.append(out["text"])
        elif out["type"] == "error":
            parts.append("\n".join(out["traceback"]))
        elif "data" in out:
            parts.append(out["data"].get("text/plain", ""))
    return "".join(parts)
