"""OpenAI-compatible API access: one chat client, a price table and a reply cache (layer 1).

Imports nothing from navrl except :mod:`navrl.fileio`.
"""
from navrl.api.cache import ResponseCache, request_key
from navrl.api.client import (APIConfig, APIError, APIRequestError, APIUnavailable, ChatClient, ChatResult,
                              MalformedReply, extract_json, image_data_url, outages_as)
from navrl.api.prices import Price, PriceTable

__all__ = ["APIConfig", "APIError", "APIRequestError", "APIUnavailable", "ChatClient", "ChatResult",
           "MalformedReply", "Price", "PriceTable", "ResponseCache", "extract_json", "image_data_url",
           "outages_as", "request_key"]
