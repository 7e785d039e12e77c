#!/usr/bin/env python3
"""Computes the seal format's known-answer vectors (versions 3 and 2, and version 1, which is
still read) independently of the Swift code, from Docs/Encryption.md alone, with the
`cryptography` package (pip install cryptography).

KnownAnswerTests.swift holds the values this prints; run it to check them again:
    python3 Tests/QueueEncryptionTests/known-answers.py
"""

import hashlib
import hmac
import struct
import uuid

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF, HKDFExpand

VERSION = 1
LABEL = b"courier-seal v2"
CHUNK = 64 * 1024

KEY = bytes(range(32))
KEY_ID = "0badc0de"
SALT = bytes(range(0xA0, 0xB0))
QUEUE_ID = uuid.UUID("6f1c2a4e-3b5d-4c7e-9a8b-0d1e2f3a4b5c")
IDEMPOTENCY_KEY = "order-42"
TARGET = b"/orders?id=42&name=Zo\xc3\xab"
BODY = bytes(i % 251 for i in range(CHUNK + 5))


def key_check_value(key):
    return hmac.new(key, b"courier key check v1", hashlib.sha256).digest()[:16].hex()


def field_key(key, salt, field, version=1):
    if version == 1:
        info = f"courier-seal v1 field={field}".encode()
        return HKDF(algorithm=hashes.SHA256(), length=32, salt=salt, info=info).derive(key)
    # Versions 2 and 3: the extract depends on the key alone (salt: the label); the entry's salt and
    # the field's name are in the info.
    prk = hmac.new(LABEL, key, hashlib.sha256).digest()
    return HKDFExpand(algorithm=hashes.SHA256(), length=32, info=LABEL + salt + field.encode()).derive(prk)


def part(data):
    return struct.pack(">I", len(data)) + data


def associated_data(field, version=1):
    return bytes([version]) + part(QUEUE_ID.bytes) + part(IDEMPOTENCY_KEY.encode()) + part(KEY_ID.encode()) + part(field.encode())


def nonce(chunk, last):
    return chunk.to_bytes(11, "big") + bytes([1 if last else 0])


def seal(field, plaintext, version=1):
    aead = AESGCM(field_key(KEY, SALT, field, version))
    ad = associated_data(field, version)
    pieces = [plaintext[i:i + CHUNK] for i in range(0, len(plaintext), CHUNK)] or [b""]
    return [aead.encrypt(nonce(n, n == len(pieces) - 1), piece, ad) for n, piece in enumerate(pieces)]


HEADERS = b"accept: application/json\nx-private: v\n"
SMALL_BODY = b'{"total":12}'


def request_plaintext(target, headers):
    return struct.pack(">I", len(target)) + target + headers


if __name__ == "__main__":
    print("keyCheckValue", key_check_value(KEY))
    print("-- version 3")
    print("entryKeyV3", field_key(KEY, SALT, "entry", 3).hex())
    print("entryAssociatedDataV3", associated_data("entry", 3).hex())
    request = request_plaintext(TARGET, HEADERS)
    [joined] = seal("entry", request + SMALL_BODY, 3)
    print("sealedRequestV3", joined[:len(request)].hex())
    print("sealedBodyV3", joined[len(request):].hex())
    print("-- version 2")
    print("requestKeyV2", field_key(KEY, SALT, "request", 2).hex())
    print("bodyKeyV2", field_key(KEY, SALT, "body", 2).hex())
    print("requestAssociatedDataV2", associated_data("request", 2).hex())
    sealed_request = b"".join(seal("request", request_plaintext(TARGET, HEADERS), 2))
    print("sealedRequestV2", sealed_request.hex())
    print("entrySealV2", (bytes([2]) + SALT + sealed_request).hex())
    chunks = seal("body", BODY, 2)
    print("bodyFirstChunkTagV2", chunks[0][-16:].hex())
    print("bodyFinalChunkV2", chunks[1].hex())
    print("sealedBodySHA256V2", hashlib.sha256(b"".join(chunks)).hexdigest())
    print("-- version 1")
    print("targetKey", field_key(KEY, SALT, "target").hex())
    print("bodyKey", field_key(KEY, SALT, "body").hex())
    print("targetAssociatedData", associated_data("target").hex())
    print("sealedTarget", b"".join(seal("target", TARGET)).hex())
    print("sealedEmptyHeaders", b"".join(seal("headers", b"")).hex())
    chunks = seal("body", BODY)
    print("bodyChunks", len(chunks))
    print("bodyFirstChunkTag", chunks[0][-16:].hex())
    print("bodyFinalChunk", chunks[1].hex())
    print("sealedBodySHA256", hashlib.sha256(b"".join(chunks)).hexdigest())
