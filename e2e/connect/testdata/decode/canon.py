# One canonical JSON form for a row, applied both to the values a test
# produced and to the values delta-rs reads back, so that two rows are
# equal exactly when every value is: decimals keep their digits and scale,
# timestamps are microseconds since the epoch, floats their repr (a float32
# column compares as the float32 value, NaN and infinities included).
import base64
import datetime
import decimal
import json
import uuid

EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)


def canon(v):
    if v is None or isinstance(v, (bool, int, str)):
        return v
    if isinstance(v, float):
        return "float:" + repr(v)
    if isinstance(v, decimal.Decimal):
        return "decimal:" + str(v)
    if isinstance(v, datetime.datetime):
        if v.tzinfo is None:
            raise ValueError("naive datetime %r" % v)
        return "micros:%d" % ((v - EPOCH) // datetime.timedelta(microseconds=1))
    if isinstance(v, datetime.date):
        return "date:" + v.isoformat()
    if isinstance(v, (bytes, bytearray)):
        return "base64:" + base64.b64encode(v).decode()
    if isinstance(v, uuid.UUID):
        return str(v)
    if isinstance(v, dict):
        return {k: canon(x) for k, x in v.items()}
    if isinstance(v, list):
        return [canon(x) for x in v]
    raise TypeError("no canonical form for %r" % (v,))


def dumps(row):
    return json.dumps(canon(row), sort_keys=True, ensure_ascii=False)
