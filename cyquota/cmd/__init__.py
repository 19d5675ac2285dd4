"""Console scripts.

oslo.messaging imports oslo.service's eventlet backend, which warns on
import although cyquota never uses eventlet; operators should not see that
on every command.
"""

import warnings

warnings.filterwarnings('ignore', message='Eventlet is deprecated')
warnings.filterwarnings('ignore', module='oslo_service')
warnings.filterwarnings('ignore', module='oslo_utils.eventletutils')
