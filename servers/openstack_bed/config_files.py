"""The services' oslo.config files, written from ``{section: {option:
value}}`` dicts: the bed's settings first, a test's extra sections over
them."""

import configparser


def write(path, *layers):
    """Write ``path`` from ``layers`` of ``{section: {option: value}}``, a
    later layer's options replacing an earlier one's; returns ``path``."""
    config = configparser.ConfigParser(interpolation=None)
    config.optionxform = str
    for layer in layers:
        for section, options in (layer or {}).items():
            if section != 'DEFAULT' and not config.has_section(section):
                config.add_section(section)
            for option, value in options.items():
                config.set(section, option, _text(value))
    with open(path, 'w') as out:
        config.write(out)
    return path


def _text(value):
    if isinstance(value, bool):
        return 'true' if value else 'false'
    if isinstance(value, (list, tuple)):
        return ','.join(str(item) for item in value)
    return str(value)
