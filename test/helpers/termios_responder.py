"""A Modbus RTU device for the baud/parity sweep tests, on the far end of a socat pty pair.

A pty does not enforce a baud rate: bytes pass whatever the termios of either end says. So this
device looks at the settings instead of the signal: for every request frame it reads the termios
of the driver's end of the pair (tcgetattr on that pty, opened by its path) and answers only when
the unit, rate and parity are ones it was told to answer at. Every request it receives is printed
as one JSON line on stdout with the settings seen: the test's proof of what the driver set for it.

Linux's pty driver keeps the rate (and PARODD) a program sets but always clears PARENB, so on a
pty "parity" reads as none; stty refuses parenb on one ("unable to perform all requested
operations").

  python3 termios_responder.py --pty PEER --watch DRIVER_SIDE --answer '[[unit, baud, "none"], ...]'

Answers function 3 with register value = 100 * unit + address, and function 43 / MEI 14 (Read
Device Identification, basic stream: conformity 0x01, one response) with VendorName "Unit <unit>",
ProductCode "P-<baud>" and MajorMinorRevision "1.0", at the same settings only; other functions are
ignored.
"""

import argparse
import json
import os
import sys
import termios


def crc16(data):
    crc = 0xFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ 0xA001 if crc & 1 else crc >> 1
    return crc


SPEEDS = {getattr(termios, 'B%d' % r): r for r in (300, 600, 1200, 2400, 4800, 9600, 19200, 38400, 57600, 115200, 230400, 460800, 921600)}


def settings(fd):
    attrs = termios.tcgetattr(fd)
    cflag, ospeed = attrs[2], attrs[5]
    parity = 'none' if not cflag & termios.PARENB else ('odd' if cflag & termios.PARODD else 'even')
    return SPEEDS.get(ospeed, ospeed), parity


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--pty', required=True)
    ap.add_argument('--watch', required=True)
    ap.add_argument('--answer', required=True)
    args = ap.parse_args()
    answer = {(u, b, p) for u, b, p in json.loads(args.answer)}
    fd = os.open(args.pty, os.O_RDWR | os.O_NOCTTY)
    watch = os.open(args.watch, os.O_RDONLY | os.O_NOCTTY | os.O_NONBLOCK)
    print(json.dumps({'ready': True}), flush=True)
    buf = b''
    while True:
        chunk = os.read(fd, 256)
        if not chunk:
            return
        buf += chunk
        # Function 3 requests are 8 bytes: unit, 3, address, quantity, CRC (low byte first);
        # function 43 / MEI 14 ones 7: unit, 0x2B, 0x0E, read code, object id, CRC.
        while len(buf) >= 7:
            size = 7 if buf[1] == 0x2B else 8
            if len(buf) < size:
                break
            frame = buf[:size]
            if crc16(frame[:size - 2]) != frame[size - 2] | (frame[size - 1] << 8):
                buf = buf[1:]
                continue
            buf = buf[size:]
            unit, fc = frame[0], frame[1]
            baud, parity = settings(watch)
            if fc == 0x2B:
                address = frame[4]  # the object id asked for
                answered = frame[2] == 0x0E and (unit, baud, parity) in answer
            else:
                address = (frame[2] << 8) | frame[3]
                count = (frame[4] << 8) | frame[5]
                answered = fc == 3 and (unit, baud, parity) in answer
            print(json.dumps({'unit': unit, 'fc': fc, 'address': address, 'baud': baud, 'parity': parity, 'answered': answered}), flush=True)
            if not answered:
                continue
            if fc == 0x2B:
                objects = [b'Unit %d' % unit, b'P-%d' % baud, b'1.0']
                body = bytes([unit, 0x2B, 0x0E, frame[3], 0x01, 0, 0, len(objects)])
                body += b''.join(bytes([i, len(v)]) + v for i, v in enumerate(objects))
            else:
                body = bytes([unit, 3, 2 * count]) + b''.join(((100 * unit + address + i) & 0xFFFF).to_bytes(2, 'big') for i in range(count))
            c = crc16(body)
            os.write(fd, body + bytes([c & 0xFF, c >> 8]))


if __name__ == '__main__':
    try:
        main()
    except (KeyboardInterrupt, BrokenPipeError):
        pass
    sys.exit(0)
