"""Console scripts.

oslo.messaging imports oslo.service's eventlet backend, which warns on
import although cyquota never uses eventlet; operators should not see that
on every command.
"""

import warnings

# Eventlet's own warning is a plain Warning whose message starts with a
# newline; a filter's message is matched from the start.
warnings.filterwarnings('ignore', message=r'\s*Eventlet is deprecated')
warnings.filterwarnings('ignore', module='oslo_service')
warnings.filterwarnings('ignore', module='oslo_utils.eventletutils')
