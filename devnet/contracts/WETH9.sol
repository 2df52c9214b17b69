// SPDX-License-Identifier: MIT OR Apache-2.0
pragma solidity 0.8.37;

/// @title WETH9 — wrapped ether for the local devnet
/// @notice Behaves like the canonical WETH9 (Base's WETH at 0x4200000000000000000000000000000000000006): deposit
/// ether to get the same amount of WETH, withdraw to get it back; `totalSupply` is the ether held; an allowance of
/// type(uint256).max is never decreased; failures revert without a reason string, as in WETH9.
/// @dev Placed with `anvil_setCode`, so no constructor runs: name, symbol and decimals are constants. Storage
/// begins at slot 3 so that `balanceOf` (slot 3) and `allowance` (slot 4) sit where WETH9 keeps them;
/// `balanceOf[a]` lives at `keccak256(abi.encode(a, uint256(3)))`.
contract WETH9 layout at 3 {
    /// @notice Token name.
    string public constant name = "Wrapped Ether";

    /// @notice Token symbol.
    string public constant symbol = "WETH";

    /// @notice Number of decimals of the token's base unit.
    uint8 public constant decimals = 18;

    /// @notice WETH balance of each account (slot 3).
    mapping(address account => uint256) public balanceOf;

    /// @notice Remaining amount `spender` may move on behalf of `owner` (slot 4).
    mapping(address owner => mapping(address spender => uint256)) public allowance;

    /// @notice ERC-20 approval.
    event Approval(address indexed src, address indexed guy, uint256 wad);

    /// @notice ERC-20 transfer (deposits and withdrawals emit Deposit / Withdrawal instead).
    event Transfer(address indexed src, address indexed dst, uint256 wad);

    /// @notice `dst` wrapped `wad` wei.
    event Deposit(address indexed dst, uint256 wad);

    /// @notice `src` unwrapped `wad` wei.
    event Withdrawal(address indexed src, uint256 wad);

    /// @notice Plain ether sent here is wrapped for the sender.
    receive() external payable {
        deposit();
    }

    /// @notice Wraps msg.value wei into WETH for the caller.
    function deposit() public payable {
        balanceOf[msg.sender] += msg.value;
        emit Deposit(msg.sender, msg.value);
    }

    /// @notice Unwraps `wad` WETH of the caller and sends the ether back to the caller.
    /// @dev Sends with a plain call that forwards all gas, where WETH9's `transfer` gave the receiver 2300 gas
    /// (solc 0.8.37 deprecates `transfer`). Reentering is harmless: the balance is debited before the call.
    function withdraw(uint256 wad) external {
        require(balanceOf[msg.sender] >= wad);
        balanceOf[msg.sender] -= wad;
        (bool ok,) = payable(msg.sender).call{value: wad}("");
        require(ok);
        emit Withdrawal(msg.sender, wad);
    }

    /// @notice Total WETH in existence, which is the ether this contract holds.
    function totalSupply() external view returns (uint256) {
        return address(this).balance;
    }

    /// @notice Sets the caller's allowance for `guy` to `wad`.
    function approve(address guy, uint256 wad) external returns (bool) {
        allowance[msg.sender][guy] = wad;
        emit Approval(msg.sender, guy, wad);
        return true;
    }

    /// @notice Moves `wad` WETH from the caller to `dst`.
    function transfer(address dst, uint256 wad) external returns (bool) {
        return transferFrom(msg.sender, dst, wad);
    }

    /// @notice Moves `wad` WETH from `src` to `dst`; a caller other than `src` spends its allowance.
    function transferFrom(address src, address dst, uint256 wad) public returns (bool) {
        require(balanceOf[src] >= wad);

        if (src != msg.sender && allowance[src][msg.sender] != type(uint256).max) {
            require(allowance[src][msg.sender] >= wad);
            allowance[src][msg.sender] -= wad;
        }

        balanceOf[src] -= wad;
        balanceOf[dst] += wad;

        emit Transfer(src, dst, wad);
        return true;
    }
}
