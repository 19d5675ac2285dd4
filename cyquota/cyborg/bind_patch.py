"""What a ``PATCH /v2/accelerator_requests`` asks of Cyborg.

Nova binds with a map from ARQ uuids to RFC 6902 patches adding
``/hostname``, ``/device_rp_uuid`` and ``/instance_uuid`` (an admin may add
``/project_id`` at API 2.1+), and unbinds with patches removing them
(``cyborg/api/controllers/v2/arqs.py``, ``nova/accelerator/cyborg.py``).
A document Cyborg would refuse is not read at all: the filter passes it on
and Cyborg answers its own 400.
"""

import dataclasses

_BIND_FIELDS = frozenset(('hostname', 'device_rp_uuid', 'instance_uuid'))
_FIELDS = _BIND_FIELDS | {'project_id'}


@dataclasses.dataclass
class Bind:
    """The bind of one ARQ: the instance it is bound to, and the project an
    admin named in the patch (None: the caller's)."""

    instance_uuid: str
    project_id: object = None


@dataclasses.dataclass
class PatchRequest:
    """The binds (``{arq_uuid: Bind}``) and unbinds (ARQ uuids) of one
    PATCH."""

    binds: dict
    unbinds: list


def _operations(patch):
    """``{field: value}`` of one ARQ's patch and its op (``add`` or
    ``remove``); None when Cyborg would refuse the patch."""
    if not isinstance(patch, list) or not patch or not all(
            isinstance(p, dict) and isinstance(p.get('path'), str)
            for p in patch):
        return None
    ops = {p.get('op') for p in patch}
    if len(ops) != 1 or not ops <= {'add', 'remove'}:
        return None
    fields = {}
    for p in patch:
        field = p['path'].lstrip('/')
        if field not in _FIELDS:
            return None
        fields[field] = p.get('value')
    op = ops.pop()
    if op == 'add' and any(fields.get(f) is None for f in _BIND_FIELDS):
        return None
    return op, fields


def parse(document):
    """The :class:`PatchRequest` of a PATCH body (parsed JSON); None when
    it is not one Cyborg would act on."""
    if not isinstance(document, dict) or not document:
        return None
    binds, unbinds = {}, []
    for arq_uuid, patch in document.items():
        parsed = _operations(patch)
        if parsed is None:
            return None
        op, fields = parsed
        if op == 'add':
            if not isinstance(fields['instance_uuid'], str):
                return None
            binds[arq_uuid] = Bind(fields['instance_uuid'],
                                   fields.get('project_id'))
        else:
            unbinds.append(arq_uuid)
    return PatchRequest(binds, unbinds)
