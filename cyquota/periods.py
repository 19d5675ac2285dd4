"""The periods of accelerator-hour budgets (``[budgets] period``).

A period is an ISO 8601 duration: whole months or years (``P1M``, the
default: calendar months in UTC; ``P3M``: quarters from January; ``P1Y``)
or a fixed length (``P7D``, ``PT1H``, ``PT2M``). Month periods begin on the
first of a month at 00:00 UTC, counted from January 1970; fixed ones are
laid end to end from Monday 1970-01-05 00:00 UTC, so that days begin at
midnight and weeks on Mondays. A duration mixing months with a fixed part
(``P1M2D``) has no such grid and is refused.

Instants are naive UTC datetimes, as every timestamp column holds them.
"""

import datetime
import typing

import isodate

#: The origin of fixed-length periods: a Monday at midnight UTC.
_FIXED_ORIGIN = datetime.datetime(1970, 1, 5)
_EPOCH_YEAR = 1970


class Period(typing.NamedTuple):
    """One period: the half-open interval ``[start, end)``."""

    start: datetime.datetime
    end: datetime.datetime

    def seconds(self) -> int:
        return int((self.end - self.start).total_seconds())


class Part(typing.NamedTuple):
    """The part of a window ``[start, end)`` inside ``period``."""

    period: Period
    start: datetime.datetime
    end: datetime.datetime

    def seconds(self) -> int:
        return int((self.end - self.start).total_seconds())


class Periods:
    """The grid of periods one ``[budgets] period`` value lays on time."""

    def __init__(self, spec: str):
        """Raise ValueError naming ``spec`` when it is not an ISO 8601
        duration of whole months or years, or of a fixed length of at
        least one second."""
        try:
            duration = isodate.parse_duration(spec)
        except (isodate.ISO8601Error, ValueError, TypeError):
            raise ValueError('%r is not an ISO 8601 duration (such as P1M, '
                             'P7D or PT1H)' % (spec,))
        self.spec = spec
        if isinstance(duration, isodate.Duration):
            if duration.tdelta:
                raise ValueError('%r mixes months or years with days or '
                                 'hours: a period is whole months or a '
                                 'fixed length' % spec)
            self._months = int(duration.years * 12 + duration.months)
            self._fixed = None
            if self._months < 1 or (duration.years * 12 + duration.months
                                    != self._months):
                raise ValueError('%r is not a whole number of months' % spec)
        else:
            self._months = 0
            self._fixed = duration
            if (duration < datetime.timedelta(seconds=1)
                    or duration.microseconds):
                raise ValueError('%r is not a whole number of seconds of at '
                                 'least one' % spec)

    def of(self, instant: datetime.datetime) -> Period:
        """The period that holds ``instant``."""
        if self._fixed is not None:
            count = (instant - _FIXED_ORIGIN) // self._fixed
            start = _FIXED_ORIGIN + count * self._fixed
            return Period(start, start + self._fixed)
        index = (instant.year - _EPOCH_YEAR) * 12 + instant.month - 1
        first = index - index % self._months
        return Period(_month(first), _month(first + self._months))

    def after(self, period: Period) -> Period:
        """The period that follows ``period``."""
        return self.of(period.end)

    def parts(self, start: datetime.datetime,
              end: datetime.datetime) -> typing.List[Part]:
        """The window ``[start, end)`` cut at the periods' boundaries, in
        order (none for an empty window)."""
        parts = []
        period = self.of(start)
        while start < end:
            cut = min(end, period.end)
            parts.append(Part(period, start, cut))
            start, period = cut, self.after(period)
        return parts


def _month(index: int) -> datetime.datetime:
    """The first instant of month ``index`` counted from January 1970."""
    year, month = divmod(index, 12)
    return datetime.datetime(_EPOCH_YEAR + year, month + 1, 1)
