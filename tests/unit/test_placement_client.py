"""The pure parts of the cloud's Placement client: the class map and the
errors made of Placement's answers."""

import pytest

from cyquota.cloud import placement_errors as errors
from cyquota import resource_classes


def test_class_map_defaults_to_the_same_name():
    classes = resource_classes.ClassMap({})
    assert classes.to_placement('GPU') == 'GPU'
    assert classes.to_cyquota('VGPU') == 'VGPU'
    assert classes.to_cyquota('CUSTOM_FPGA_XILINX') == 'CUSTOM_FPGA_XILINX'


def test_class_map_both_ways():
    classes = resource_classes.ClassMap({'GPU': 'PGPU', 'FPGA': 'CUSTOM_FPGA'})
    assert classes.to_placement('GPU') == 'PGPU'
    assert classes.to_placement('FPGA') == 'CUSTOM_FPGA'
    assert classes.to_placement('VGPU') == 'VGPU'
    assert classes.to_cyquota('PGPU') == 'GPU'
    assert classes.to_cyquota('CUSTOM_FPGA') == 'FPGA'
    # A mapped resource's own name is no longer a class of cyquota's.
    assert classes.to_cyquota('GPU') is None
    assert classes.to_cyquota('not a class') is None


@pytest.mark.parametrize('mapping, message', [
    ({'gpu': 'PGPU'}, "'gpu' is not a cyquota resource name"),
    ({'GPU': 'GRAPHICS'}, "'GRAPHICS' (for GPU) is not a Placement "
                          "resource class"),
    ({'GPU': ''}, "'' (for GPU) is not a Placement resource class"),
    ({'GPU': 'custom_x'}, "'custom_x' (for GPU) is not a Placement"),
    ({'FPGA': 'PGPU', 'GPU': 'PGPU'}, 'PGPU is the class of both FPGA and '
                                      'GPU'),
])
def test_class_map_refuses(mapping, message):
    with pytest.raises(ValueError) as caught:
        resource_classes.ClassMap(mapping)
    assert message in str(caught.value)
    assert '\n' not in str(caught.value)


NOT_FOUND = {'errors': [{
    'status': 404, 'title': 'Not Found',
    'detail': 'The resource could not be found.\n\n No resource provider '
              'with uuid 5e1b found ',
    'code': 'placement.resource_provider.not_found',
    'request_id': 'req-1'}]}


def test_http_error_carries_placements_code_on_one_line():
    error = errors.http_error('GET', '/resource_providers/5e1b/inventories',
                              404, NOT_FOUND)
    assert type(error) is errors.PlacementNotFound
    assert error.code == 'placement.resource_provider.not_found'
    assert str(error) == (
        'Placement GET /resource_providers/5e1b/inventories: 404 '
        'placement.resource_provider.not_found: The resource could not be '
        'found. No resource provider with uuid 5e1b found')


@pytest.mark.parametrize('status, code, cls', [
    (409, 'placement.concurrent_update', errors.GenerationConflict),
    (409, None, errors.PlacementConflict),
    (400, None, errors.PlacementHTTPError),
    (503, None, errors.PlacementHTTPError),
])
def test_http_error_class(status, code, cls):
    body = {'errors': [{'status': status, 'title': 'T', 'detail': 'why'}]}
    if code:
        body['errors'][0]['code'] = code
    error = errors.http_error('PUT', '/allocations/c', status, body)
    assert type(error) is cls
    assert error.code == (code or 'placement.undefined_code')
    assert error.status == status


@pytest.mark.parametrize('body', [None, {}, {'errors': []}, 'text', [1]])
def test_http_error_of_an_unexpected_body(body):
    error = errors.http_error('GET', '/usages', 502, body)
    assert str(error) == 'Placement GET /usages: 502 placement.undefined_code'
