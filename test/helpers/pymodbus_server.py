#!/usr/bin/python3
"""A real Modbus device for the tests: Debian's pymodbus (3.0.x API), TCP or RTU.

Usage: pymodbus_server.py (--tcp PORT | --rtu DEVICE [--baud N]) [--units 1,2] [--size N] [--identity JSON]

Each unit has COILS, DISCRETE_INPUTS, INPUT_REGISTERS and HOLDING_REGISTERS of --size entries at
PDU addresses 0..size-1 (zero_mode, so PDU address == datastore index; Kura address 1 == PDU 0).
Anything beyond answers exception 2 (ILLEGAL DATA ADDRESS), as a real device does.

stdout, one JSON object per line:
  {"ev":"ready","port":N}                   listening (TCP: the bound port, RTU: 0)
  {"ev":"req","unit":U,"fc":F,"address":A,"count":C[,"values":[...]]}   one per request received
  {"ev":"values","id":I,"values":[...]}     answer to a "get" command
stdin, one JSON object per line:
  {"cmd":"set","unit":U,"table":"hr|ir|co|di","address":A,"values":[...]}
  {"cmd":"get","id":I,"unit":U,"table":"hr|ir|co|di","address":A,"count":C}
  {"cmd":"mode","delay_ms":N,"silent":bool,"silent_units":[U...]}  answer late / not at all
                                            (timeouts), for every unit or only the listed ones
"""

import argparse
import asyncio
import json
import sys

from pymodbus.device import ModbusDeviceIdentification
from pymodbus.datastore import (ModbusSequentialDataBlock, ModbusServerContext,
                                ModbusSlaveContext)
from pymodbus.framer.rtu_framer import ModbusRtuFramer
from pymodbus.framer.socket_framer import ModbusSocketFramer
from pymodbus.server.async_io import (ModbusConnectedRequestHandler, ModbusSerialServer,
                                      ModbusSingleRequestHandler, ModbusTcpServer)

MODE = {"delay_ms": 0, "silent": False, "silent_units": []}


def emit(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def describe(request):
    """The request as the test sees it (the server-side request count)."""
    out = {"ev": "req", "unit": request.unit_id, "fc": request.function_code,
           "address": getattr(request, "address", None)}
    if hasattr(request, "count"):
        out["count"] = request.count
    if hasattr(request, "values") and request.values is not None:
        out["values"] = [int(v) for v in request.values]
        out["count"] = len(request.values)
    elif hasattr(request, "value") and request.value is not None:
        out["values"] = [int(request.value)]
        out["count"] = 1
    return out


class Logged:
    """Mixin: log every decoded request, then answer (maybe late, maybe never)."""

    def execute(self, request, *addr):
        emit(describe(request))
        if MODE["silent"] or request.unit_id in MODE["silent_units"]:
            return
        if MODE["delay_ms"] > 0:
            asyncio.get_event_loop().call_later(
                MODE["delay_ms"] / 1000, lambda: super(Logged, self).execute(request, *addr))
            return
        super().execute(request, *addr)


class TcpHandler(Logged, ModbusConnectedRequestHandler):
    pass


class SerialHandler(Logged, ModbusSingleRequestHandler):
    pass


def make_context(units, size):
    slaves = {}
    for unit in units:
        slaves[unit] = ModbusSlaveContext(
            di=ModbusSequentialDataBlock(0, [False] * size),
            co=ModbusSequentialDataBlock(0, [False] * size),
            ir=ModbusSequentialDataBlock(0, [0] * size),
            hr=ModbusSequentialDataBlock(0, [0] * size),
            zero_mode=True)
    return ModbusServerContext(slaves=slaves, single=False)


FC_OF_TABLE = {"co": 1, "di": 2, "hr": 3, "ir": 4}


def command(context, line):
    msg = json.loads(line)
    cmd = msg.get("cmd")
    if cmd == "set":
        slave = context[msg["unit"]]
        values = msg["values"]
        if msg["table"] in ("co", "di"):
            values = [bool(v) for v in values]
        slave.setValues(FC_OF_TABLE[msg["table"]], msg["address"], values)
    elif cmd == "get":
        slave = context[msg["unit"]]
        values = slave.getValues(FC_OF_TABLE[msg["table"]], msg["address"], msg["count"])
        emit({"ev": "values", "id": msg.get("id"), "values": [int(v) for v in values]})
    elif cmd == "mode":
        MODE["delay_ms"] = int(msg.get("delay_ms", 0))
        MODE["silent"] = bool(msg.get("silent", False))
        MODE["silent_units"] = [int(u) for u in msg.get("silent_units", [])]


async def read_commands(context):
    loop = asyncio.get_event_loop()
    while True:
        line = await loop.run_in_executor(None, sys.stdin.readline)
        if not line:  # the test went away: do not outlive it
            return
        if line.strip():
            command(context, line)


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--tcp", type=int)
    parser.add_argument("--rtu")
    parser.add_argument("--baud", type=int, default=9600)
    parser.add_argument("--units", default="1")
    parser.add_argument("--size", type=int, default=1000)
    parser.add_argument("--identity", help="JSON object: Read Device Identification objects by name")
    args = parser.parse_args()
    identity = ModbusDeviceIdentification(info_name=json.loads(args.identity)) if args.identity else None
    context = make_context([int(u) for u in args.units.split(",")], args.size)

    if args.tcp is not None:
        server = ModbusTcpServer(context, ModbusSocketFramer, identity, ("127.0.0.1", args.tcp),
                                 handler=TcpHandler, allow_reuse_address=True)
        task = asyncio.create_task(server.serve_forever())
        await server.serving
        emit({"ev": "ready", "port": server.server.sockets[0].getsockname()[1]})
    else:
        server = ModbusSerialServer(context, ModbusRtuFramer, port=args.rtu, baudrate=args.baud,
                                    handler=SerialHandler, identity=identity)
        await server.start()
        task = asyncio.create_task(server.serve_forever())
        emit({"ev": "ready", "port": 0})
    await read_commands(context)
    task.cancel()


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        pass
