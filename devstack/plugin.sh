#!/bin/bash
#
# plugin.sh - the cyquota devstack plugin
#
# devstack calls it as ``plugin.sh <mode> [<phase>]`` (see
# https://docs.openstack.org/devstack/latest/plugins.html) after sourcing
# devstack/settings.

# shellcheck source-path=SCRIPTDIR source=lib/cyquota
source "$CYQUOTA_DIR/devstack/lib/cyquota"

if is_service_enabled cyquota-api cyquota-conductor; then
    case $1 in
        stack)
            case $2 in
                install)
                    echo_summary "Installing cyquota"
                    install_cyquota
                    ;;
                post-config)
                    echo_summary "Configuring cyquota"
                    create_cyquota_accounts
                    configure_cyquota
                    ;;
                extra)
                    echo_summary "Initializing and starting cyquota"
                    init_cyquota
                    start_cyquota
                    ;;
            esac
            ;;
        unstack)
            stop_cyquota
            ;;
        clean)
            cleanup_cyquota
            ;;
    esac
fi
