import asyncio

import pytest

from l2mac.concurrency import together
from l2mac.errors import ProviderError


def test_work_done_together_gives_what_each_gave_in_the_order_it_was_given() -> None:
    async def after(seconds: float, value: str) -> str:
        await asyncio.sleep(seconds)
        return value

    assert asyncio.run(together([after(0.03, "a"), after(0.0, "b"), after(0.01, "c")])) == ["a", "b", "c"]


def test_agents_working_together_are_stopped_when_one_of_them_stops_the_run() -> None:
    """``gather`` alone leaves the others running: an agent's answer would land in the project after the run
    stopped (and after its files were put back), and a sample would still be asked of the model."""
    landed: list[str] = []

    async def stops() -> None:
        await asyncio.sleep(0)
        raise ProviderError("the key was revoked")

    async def writes() -> None:
        await asyncio.sleep(0.05)
        landed.append("an answer")

    async def fails_too() -> None:
        await asyncio.sleep(0)
        raise ValueError("a bug beside the stop")

    async def run() -> None:
        with pytest.raises(ProviderError) as raised:
            await together([stops(), writes(), fails_too()])
        assert raised.value.__notes__ == ["also raised alongside: ValueError: a bug beside the stop"]
        await asyncio.sleep(0.1)

    asyncio.run(run())
    assert landed == []
