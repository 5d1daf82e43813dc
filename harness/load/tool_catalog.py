"""A small built-in set of BFCL-style function definitions, and BFCL's conversion of them to OpenAI ``tools``.

The definitions are written in the Gorilla format the BFCL data uses (``"type": "dict"`` parameters, ``float``,
dotted names), each with a question that calls for it, so the ``tool-calls`` workload runs without the BFCL data
(which arrives with the parity suite). ``to_openai_tool`` is ``bfcl_eval``'s ``convert_to_tool`` for the OpenAI
completions style: dots in names become underscores, Gorilla types map to JSON-schema types, floats gain
``"format": "float"``; the same conversion serves real BFCL entries.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass
from typing import Any

GORILLA_TO_OPENAPI = {
    "integer": "integer", "number": "number", "float": "number", "string": "string", "boolean": "boolean",
    "bool": "boolean", "array": "array", "list": "array", "tuple": "array", "dict": "object", "object": "object",
    "any": "string",
}


@dataclass(frozen=True, slots=True)
class CatalogEntry:
    question: str
    function: dict[str, Any]
    """The Gorilla-format definition, as in BFCL's ``function`` lists."""


def _fn(name: str, description: str, properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"name": name, "description": description,
            "parameters": {"type": "dict", "properties": properties, "required": required}}


def _p(kind: str, description: str, **extra: Any) -> dict[str, Any]:
    return {"type": kind, "description": description, **extra}


BUILTIN: tuple[CatalogEntry, ...] = (
    CatalogEntry("Find the area of a triangle with a base of 10 units and height of 5 units.", _fn(
        "calculate_triangle_area", "Calculate the area of a triangle given its base and height.",
        {"base": _p("integer", "The base of the triangle."), "height": _p("integer", "The height of the triangle."),
         "unit": _p("string", "The unit of measure.", default="units")}, ["base", "height"])),
    CatalogEntry("Play 20 minutes of Taylor Swift songs.", _fn(
        "spotify.play", "Play specific tracks from a given artist for a specific time duration.",
        {"artist": _p("string", "The artist whose songs you want to play."),
         "duration": _p("integer", "The duration for which the songs should be played, in minutes.")},
        ["artist", "duration"])),
    CatalogEntry("What is the weather like in Berlin today, in celsius?", _fn(
        "get_current_weather", "Get the current weather in a given location.",
        {"location": _p("string", "The city and country, e.g. Paris, France."),
         "unit": _p("string", "The temperature unit.", enum=["celsius", "fahrenheit"])}, ["location"])),
    CatalogEntry("Convert 150 euros to US dollars.", _fn(
        "currency_converter.convert", "Convert an amount from one currency to another at today's rate.",
        {"amount": _p("float", "The amount to convert."), "from_currency": _p("string", "ISO code to convert from."),
         "to_currency": _p("string", "ISO code to convert to.")}, ["amount", "from_currency", "to_currency"])),
    CatalogEntry("Book a table for 4 at Luigi's at 7:30 pm on March 3rd.", _fn(
        "restaurant.book_table", "Reserve a table at a restaurant.",
        {"restaurant": _p("string", "Name of the restaurant."), "party_size": _p("integer", "Number of guests."),
         "date": _p("string", "Date in YYYY-MM-DD format."), "time": _p("string", "Time in HH:MM, 24-hour clock.")},
        ["restaurant", "party_size", "date", "time"])),
    CatalogEntry("Calculate the compound interest on $10000 at 5% per year for 10 years, compounded monthly.", _fn(
        "finance.compound_interest", "Calculate compound interest for an initial principal.",
        {"principal": _p("integer", "The initial amount."), "rate": _p("float", "Annual interest rate as a decimal."),
         "years": _p("integer", "Number of years."),
         "compounds_per_year": _p("integer", "Times interest is compounded per year.", default=1)},
        ["principal", "rate", "years"])),
    CatalogEntry("Find flights from SFO to JFK on 2025-06-01 for 2 adults in economy.", _fn(
        "flights.search", "Search for flights between two airports.",
        {"origin": _p("string", "IATA code of the departure airport."),
         "destination": _p("string", "IATA code of the arrival airport."),
         "date": _p("string", "Departure date, YYYY-MM-DD."), "passengers": _p("integer", "Number of passengers."),
         "cabin": _p("string", "Cabin class.", enum=["economy", "premium", "business", "first"])},
        ["origin", "destination", "date"])),
    CatalogEntry("Sort the list [5, 3, 9, 1] in descending order.", _fn(
        "array_sort", "Sort a list of numbers.",
        {"list": _p("array", "The list of numbers to sort.", items={"type": "float"}),
         "order": _p("string", "Sort order.", enum=["ascending", "descending"])}, ["list", "order"])),
    CatalogEntry("Send an email to alice@example.com with subject 'Meeting' saying the meeting moved to 3 pm.", _fn(
        "email.send", "Send an email message.",
        {"to": _p("string", "Recipient address."), "subject": _p("string", "Subject line."),
         "body": _p("string", "Message text.")}, ["to", "subject", "body"])),
    CatalogEntry("Get the stock price of NVDA for the last 5 days.", _fn(
        "stock.price_history", "Fetch daily closing prices of a stock.",
        {"ticker": _p("string", "The stock's ticker symbol."), "days": _p("integer", "How many recent days.")},
        ["ticker", "days"])),
    CatalogEntry("Translate 'good morning' into Japanese.", _fn(
        "translate_text", "Translate text into a target language.",
        {"text": _p("string", "The text to translate."), "target_language": _p("string", "Language to translate to."),
         "source_language": _p("string", "Language of the text; detected when omitted.")},
        ["text", "target_language"])),
    CatalogEntry("Set a timer for 25 minutes labelled 'pomodoro'.", _fn(
        "timer.set", "Start a countdown timer.",
        {"minutes": _p("integer", "Length of the timer in minutes."), "label": _p("string", "A name for the timer."),
         "options": _p("dict", "Extra settings.", properties={"sound": _p("boolean", "Ring when done.")})},
        ["minutes"])),
)


def _cast_types(properties: dict[str, Any]) -> None:
    """BFCL's ``_cast_to_openai_type``: Gorilla types to JSON-schema types, recursively."""
    for value in properties.values():
        kind = value.get("type", "string")
        if kind == "float":
            value["format"] = "float"
            value["description"] = value.get("description", "") + " This is a float type value."
        value["type"] = GORILLA_TO_OPENAPI.get(kind, "string")
        if "properties" in value:
            _cast_types(value["properties"])
        items = value.get("items")
        if isinstance(items, dict) and "type" in items:
            items["type"] = GORILLA_TO_OPENAPI[items["type"]]
            if isinstance(items.get("items"), dict) and "type" in items["items"]:
                items["items"]["type"] = GORILLA_TO_OPENAPI[items["items"]["type"]]
            if "properties" in items:
                _cast_types(items["properties"])


def to_openai_tool(function: dict[str, Any]) -> dict[str, Any]:
    """One Gorilla-format function as an OpenAI ``{"type": "function", "function": ...}`` tool."""
    item = copy.deepcopy(function)
    item["name"] = re.sub(r"\.", "_", item["name"])
    item.pop("response", None)  # present in multi-turn docs; not part of a tool's schema
    parameters = item.setdefault("parameters", {"type": "dict", "properties": {}})
    parameters["type"] = "object"
    _cast_types(parameters.get("properties", {}))
    return {"type": "function", "function": item}
