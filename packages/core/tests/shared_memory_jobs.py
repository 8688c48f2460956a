"""Child-process bodies for test_shared_memory.py. They live in a plain module, which the tests put
on sys.path, so that a spawned child (a fresh interpreter) can import them by name."""

import ember


def fill(tensor, value):
    tensor.fill_(value)


def add_one(tensor):
    tensor.add_(1)


def receive_and_write(inbox, outbox):
    """Takes a tensor from inbox, writes into it, and reports what it received."""
    tensor = inbox.get(timeout=10)
    tensor.mul_(10)
    outbox.put((str(tensor.dtype), tuple(tensor.shape), tensor.stride(), tensor.storage_offset(),
                tensor.is_shared()))


def receive_through_pipe(conn):
    tensor = conn.recv()
    tensor.fill_(5)
    conn.send("done")


_kept = []


def keep_a_shared_tensor(conn):
    """Shares a tensor (under the parent's file_system strategy, inherited by fork), keeps it alive,
    and reports the /dev/shm names this process made; they must be gone once it has exited."""
    import os

    _kept.append(ember.ones(8).share_memory_())
    conn.send([n for n in os.listdir("/dev/shm") if n.startswith(f"ember_{os.getpid()}_")])


def fail_on_one(i):
    if i == 1:
        raise ValueError(f"child {i} failed")


def exit_with_three(i):
    import os

    os._exit(3)


def hogwild(i, model, steps):
    """A few SGD steps on this process's own data: process i's inputs are nonzero only in feature
    i, so its steps move only column i of the weight."""
    optimizer = ember.optim.SGD(model.parameters(), lr=0.1)
    x = ember.zeros(4, 2)
    x[:, i] = 1.0
    target = ember.full((4, 1), 2.0)
    for _ in range(steps):
        optimizer.zero_grad()
        loss = ((model(x) - target) ** 2).mean()
        loss.backward()
        optimizer.step()
