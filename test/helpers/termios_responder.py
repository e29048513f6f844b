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

Answers function 3 with register value = 100 * unit + address; other functions are ignored.
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
        # Function 3 requests are 8 bytes: unit, 3, address, quantity, CRC (low byte first).
        while len(buf) >= 8:
            frame = buf[:8]
            if crc16(frame[:6]) != frame[6] | (frame[7] << 8):
                buf = buf[1:]
                continue
            buf = buf[8:]
            unit, fc = frame[0], frame[1]
            address = (frame[2] << 8) | frame[3]
            count = (frame[4] << 8) | frame[5]
            baud, parity = settings(watch)
            answered = fc == 3 and (unit, baud, parity) in answer
            print(json.dumps({'unit': unit, 'fc': fc, 'address': address, 'baud': baud, 'parity': parity, 'answered': answered}), flush=True)
            if not answered:
                continue
            body = bytes([unit, 3, 2 * count]) + b''.join(((100 * unit + address + i) & 0xFFFF).to_bytes(2, 'big') for i in range(count))
            c = crc16(body)
            os.write(fd, body + bytes([c & 0xFF, c >> 8]))


if __name__ == '__main__':
    try:
        main()
    except (KeyboardInterrupt, BrokenPipeError):
        pass
    sys.exit(0)
