// SPDX-License-Identifier: MIT OR Apache-2.0
pragma solidity 0.8.37;

/// @title TestSimulationProbe — for tests only; never placed by `holdfast devnet up`
/// @notice Tells a simulation apart from a real block the way a hostile contract would. `check()` reverts with the
/// first difference it finds between the block it runs in and the next real one: a zero gas price, base fee or
/// randomness, a block not after the one the test recorded, helper code at the address a simulator might place it, a
/// transaction whose origin is not its caller.
/// @dev Placed with `anvil_setCode`; slot 0 (`notAfter`) is set with `anvil_setStorageAt`.
contract TestSimulationProbe {
    /// @notice The block number the probe's block must be after (the latest block when the test armed it).
    uint256 public notAfter;

    /// @notice The transaction pays no gas price: a simulation without validation.
    error ZeroGasPrice();
    /// @notice The block has no base fee: a simulation without validation.
    error ZeroBaseFee();
    /// @notice The block's randomness is zero: a simulated block nobody drew it for.
    error ZeroPrevRandao();
    /// @notice The block is not after the recorded one: a simulation of an old block.
    error StaleBlock(uint256 number, uint256 notAfter);
    /// @notice Code sits where a simulator places a helper.
    error HelperCodePresent(address helper);
    /// @notice The caller is not the transaction's origin.
    error NotTheOrigin(address origin, address caller);

    /// @notice Reverts unless the environment looks like a real block.
    function check() external payable {
        if (tx.gasprice == 0) revert ZeroGasPrice();
        if (block.basefee == 0) revert ZeroBaseFee();
        if (block.prevrandao == 0) revert ZeroPrevRandao();
        if (block.number <= notAfter) revert StaleBlock(block.number, notAfter);
        address helper = 0x00000000000000000000000000000000000BA1A9;
        if (helper.code.length != 0) revert HelperCodePresent(helper);
        if (tx.origin != msg.sender) revert NotTheOrigin(tx.origin, msg.sender);
    }
}
