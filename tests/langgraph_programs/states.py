"""Types the programs store: enums, dataclasses and pydantic models LangGraph's serializer
keeps (and is allowed to rebuild, through SERDE), and a state several programs share."""

from __future__ import annotations

import enum
import operator
from dataclasses import dataclass
from typing import Annotated, TypedDict

from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from pydantic import BaseModel


class Tier(enum.Enum):
    GOLD = "gold"


@dataclass
class Order:
    order_id: str
    total: float


class Customer(BaseModel):
    name: str
    tier: Tier


SERDE = JsonPlusSerializer(
    allowed_msgpack_modules=[(__name__, "Tier"), (__name__, "Order"), (__name__, "Customer")]
)


class Review(TypedDict):
    plan: str
    log: Annotated[list[str], operator.add]
