#!/usr/bin/python3
"""The Modbus TCP device of `make bench`'s nodered section: Debian's pymodbus (3.0.x API).

Usage: ticking_device.py --port PORT --epoch MS [--channels 50] [--tick-ms 50]

One unit (1) with 2 x CHANNELS holding registers at PDU addresses 0.. (Kura address 1 == PDU 0).
Every TICK_MS the registers change: channel c (an INT32, high word first) holds seq * 100 + c, where
seq = (now_ms - EPOCH) // TICK_MS. The values follow the wall clock, so a device restarted on the same
port goes on where it left off, and a value with seq >= the seq at the restart was read from the new
process (that is how the benchmark tells a fresh value after an outage). Every poll of every client
sees new values: each has the same work to publish.

It counts the requests it answers; nothing is written per request (the device's own CPU stays small).
stdout: {"ev":"ready","port":N}, then {"ev":"count","requests":N} per "count" command on stdin.
"""

import argparse
import asyncio
import json
import sys
import time

from pymodbus.datastore import (ModbusSequentialDataBlock, ModbusServerContext,
                                ModbusSlaveContext)
from pymodbus.framer.socket_framer import ModbusSocketFramer
from pymodbus.server.async_io import ModbusConnectedRequestHandler, ModbusTcpServer

COUNT = {"requests": 0}


def emit(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


class CountingHandler(ModbusConnectedRequestHandler):
    def execute(self, request, *addr):
        COUNT["requests"] += 1
        super().execute(request, *addr)


def registers(seq, channels):
    regs = []
    for c in range(channels):
        v = (seq * 100 + c) & 0xFFFFFFFF
        regs.append(v >> 16)
        regs.append(v & 0xFFFF)
    return regs


async def tick(slave, args):
    while True:
        seq = (int(time.time() * 1000) - args.epoch) // args.tick_ms
        slave.setValues(3, 0, registers(seq, args.channels))
        # Sleep to the next tick boundary of the wall clock.
        now = time.time() * 1000 - args.epoch
        await asyncio.sleep((args.tick_ms - now % args.tick_ms) / 1000)


async def read_commands():
    loop = asyncio.get_event_loop()
    while True:
        line = await loop.run_in_executor(None, sys.stdin.readline)
        if not line:  # the benchmark went away: do not outlive it
            return
        if line.strip() and json.loads(line).get("cmd") == "count":
            emit({"ev": "count", "requests": COUNT["requests"]})


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--epoch", type=int, required=True)
    parser.add_argument("--channels", type=int, default=50)
    parser.add_argument("--tick-ms", type=int, default=50)
    args = parser.parse_args()
    size = 2 * args.channels
    slave = ModbusSlaveContext(di=ModbusSequentialDataBlock(0, [False] * size),
                               co=ModbusSequentialDataBlock(0, [False] * size),
                               ir=ModbusSequentialDataBlock(0, [0] * size),
                               hr=ModbusSequentialDataBlock(0, [0] * size), zero_mode=True)
    context = ModbusServerContext(slaves={1: slave}, single=False)
    ticker = asyncio.create_task(tick(slave, args))
    await asyncio.sleep(0)  # the first values are in place before anyone can connect
    server = ModbusTcpServer(context, ModbusSocketFramer, None, ("127.0.0.1", args.port),
                             handler=CountingHandler, allow_reuse_address=True)
    task = asyncio.create_task(server.serve_forever())
    await server.serving
    emit({"ev": "ready", "port": server.server.sockets[0].getsockname()[1]})
    await read_commands()
    task.cancel()
    ticker.cancel()


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        pass
