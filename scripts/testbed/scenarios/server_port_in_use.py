"""A server binding a port that is taken (asyncio's create_server, as uvicorn under vLLM's API server binds)."""
# testbed: timeout=60
import asyncio
import os
import socket
import sys

sys.path.insert(0, os.path.dirname(__file__))
from _common import banner  # noqa: E402


async def serve(port):
    server = await asyncio.get_running_loop().create_server(asyncio.Protocol, "127.0.0.1", port)
    server.close()


if __name__ == "__main__":
    banner("server_port_in_use")
    holder = socket.socket()  # stands for an earlier server still running
    holder.bind(("127.0.0.1", 0))
    holder.listen()
    port = holder.getsockname()[1]
    print(f"port {port} held; starting a second server on it", file=sys.stderr, flush=True)
    asyncio.run(serve(port))  # OSError: [Errno 98] error while attempting to bind …
