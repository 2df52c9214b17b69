// SPDX-License-Identifier: MIT OR Apache-2.0
pragma solidity 0.8.37;

/// @title TestGasPriceThief — for tests only; never placed by `holdfast devnet up`
/// @notice A recipient that behaves honestly only where the gas price is zero, as in a simulation without validation:
/// there it keeps the ether it receives; on chain it forwards every wei to `THIEF`.
/// @dev Placed with `anvil_setCode`; no storage.
contract TestGasPriceThief {
    /// @notice Where the ether goes on chain.
    address public constant THIEF = 0x000000000000000000000000000000000000dEaD;

    /// @notice Forwarding the ether failed.
    error ForwardFailed();

    /// @notice Keeps the ether in a zero-gas-price simulation, forwards it to `THIEF` anywhere else.
    receive() external payable {
        if (tx.gasprice != 0) {
            (bool ok,) = THIEF.call{value: msg.value}("");
            if (!ok) revert ForwardFailed();
        }
    }
}
