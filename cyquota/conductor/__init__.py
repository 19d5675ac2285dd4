"""The conductor: agents' quota calls over RPC, and the periodic expiry and
purge of reservations.

``rpcapi.ConductorAPI`` is the client that agents import; ``manager`` is the
server's endpoint; ``rpc`` sets up the transport, target and serializer;
``service`` runs a conductor (RPC server and periodic tasks) in a process.
"""
